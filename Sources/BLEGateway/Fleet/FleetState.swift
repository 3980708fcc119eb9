import BLECore

/// A fleet gateway's view of what the others published: the device messages (dropping
/// duplicates fleet-wide, ``FleetDeviceView``) and presence (``FleetPresence``). Fed by this
/// gateway's scan and by the fleet topics the broker delivers; it runs on the adapter queue,
/// like the publisher. The broker is the only coordination between gateways.
///
///     let fleet = FleetState(topics: t, away: .seconds(60), interval: .seconds(10), discovery: true, publisher: p, executor: e)
actor FleetState {
    let topics: FleetTopics
    let publisher: Publisher
    let discovery: Bool
    private let executor: AdapterExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var view: FleetDeviceView
    private var presence: FleetPresence
    /// Devices whose presence entity was announced to Home Assistant.
    private var announced: Set<BluetoothAddress> = []
    private let clock = ContinuousClock()

    init(topics: FleetTopics, away: Duration, interval: Duration, discovery: Bool, publisher: Publisher, executor: AdapterExecutor) {
        self.topics = topics
        self.publisher = publisher
        self.discovery = discovery
        self.executor = executor
        view = FleetDeviceView(interval: interval)
        presence = FleetPresence(gatewayID: topics.gatewayID, away: away)
    }

    /// Whether this gateway publishes the advertisement `packet` of `address` now.
    func decide(_ address: BluetoothAddress, packet: UInt64) -> FleetDeviceView.Decision {
        view.decide(address, packet: packet, now: clock.now)
    }

    /// This gateway heard `address`: its smoothed RSSI goes out when due.
    func heard(_ address: BluetoothAddress, rssi: Int8) async {
        let now = clock.now
        guard let smoothed = presence.heard(address, rssi: rssi, now: now) else { return }
        await publisher.enqueue(MQTTMessage(topic: topics.presence(address, gateway: topics.gatewayID),
                                            payload: JSONValue.object([("rssi", .int(smoothed))]).bytes))
        await apply(address, presence.report(address, gateway: topics.gatewayID, rssi: smoothed, now: now))
    }

    /// A message on one of the fleet topics (`FleetTopics.subscriptions`); anything else, or
    /// a payload that is not the fleet's, is ignored.
    func receive(_ message: MQTTMessage) async {
        let base = topics.base + "/"
        guard message.topic.hasPrefix(base) else { return }
        let levels = message.topic.dropFirst(base.count).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2, let address = Self.address(levels[1]) else { return }
        let now = clock.now
        switch (levels[0], levels.count) {
        case ("devices", 2):
            if let packet = Self.packet(fromDeviceMessage: message.payload) { view.published(address, packet: packet, now: now) }
        case ("presence", 2):
            guard let nearest = FleetPresence.nearest(fromAggregate: message.text) else { return }
            await apply(address, presence.announced(address, nearest: nearest.isEmpty ? nil : nearest,
                                                    rssi: FleetPresence.rssi(fromAggregate: message.text), now: now))
        case ("presence", 3):
            let gateway = String(levels[2])
            // This gateway's own reports are applied when made.
            guard gateway != topics.gatewayID, !gateway.isEmpty, let rssi = FleetPresence.rssi(fromReport: message.text) else { return }
            await apply(address, presence.report(address, gateway: gateway, rssi: rssi, now: now))
        default:
            return
        }
    }

    /// Sends `away` for the devices no gateway heard for `away`, each at its deadline, until
    /// the task is cancelled.
    func run() async {
        while !Task.isCancelled {
            let wait = presence.nextDeadline().map { max(.milliseconds(1), $0 - clock.now) } ?? presence.window
            do { try await Task.sleep(for: wait) } catch { return }
            for (address, message) in presence.expire(now: clock.now) { await publish(address, message) }
        }
    }

    private func apply(_ address: BluetoothAddress, _ aggregate: JSONValue?) async {
        guard let aggregate else { return }
        if discovery && announced.count < 10_000 && announced.insert(address).inserted {
            await publisher.enqueue(HomeAssistantDiscovery.presenceConfig(address, topics: topics))
        }
        await publish(address, aggregate)
    }

    private func publish(_ address: BluetoothAddress, _ aggregate: JSONValue) async {
        await publisher.enqueue(MQTTMessage(topic: topics.presence(address), payload: aggregate.bytes, qos: .atLeastOnce, retain: true))
    }

    /// `C01122334455` as a topic level.
    static func address(_ level: Substring) -> BluetoothAddress? {
        guard level.utf8.count == 12, let v = UInt64(level, radix: 16) else { return nil }
        return BluetoothAddress(rawValue: v)
    }

    /// The fleet device message's own ending: `..."packet":"<16 hex digits>"}`.
    static func packet(fromDeviceMessage payload: [UInt8]) -> UInt64? {
        let tail = Array(#""packet":""#.utf8)
        let n = payload.count
        guard n >= tail.count + 18, payload[n - 2] == UInt8(ascii: "\""), payload[n - 1] == UInt8(ascii: "}"),
              Array(payload[(n - 18 - tail.count)..<(n - 18)]) == tail else { return nil }
        return UInt64(String(decoding: payload[(n - 18)..<(n - 2)], as: UTF8.self), radix: 16)
    }

    /// The fleet's device message: the gateway's own (``AdvertisementPayload/present(_:decoding:)``)
    /// with `gateway`, the id of the gateway that published it, and `packet`, what the fleet
    /// compares (``FleetDeviceView/packet(data:connectable:txPower:)``), at its end.
    static func deviceMessage(_ message: JSONValue, gateway: String, packet: UInt64) -> JSONValue {
        guard case .object(var pairs) = message else { return message }
        let hex = String(packet, radix: 16, uppercase: true)
        pairs.append(("gateway", .string(gateway)))
        pairs.append(("packet", .string(String(repeating: "0", count: 16 - hex.count) + hex)))
        return .object(pairs)
    }
}
