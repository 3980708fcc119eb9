import BLECore
import BLEWire

/// A fleet gateway's view of what the others published: the packets (dropping duplicates
/// fleet-wide, ``FleetDeviceView``) and presence (``FleetPresence``) of the devices it follows
/// (``FleetFollowing``: those it hears and its configured ones). Fed by this gateway's scan and
/// by the fleet topics the broker delivers; it runs on the adapter queue, like the publisher.
/// The broker is the only coordination between gateways.
///
///     let fleet = FleetState(topics: t, fleet: f, interval: .seconds(10), discovery: true, wanted: [a], publisher: p, executor: e)
actor FleetState {
    let topics: FleetTopics
    let publisher: Publisher
    let discovery: Bool
    private let executor: AdapterExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var view: FleetDeviceView
    private var presence: FleetPresence
    /// Devices whose presence entity was announced to Home Assistant, with the generation of
    /// the member set it named.
    private var announced: [BluetoothAddress: Int] = [:]
    /// The fleet's gateways, the availability of its Home Assistant entities (FleetMembers).
    var members: FleetMembers
    let clock = ContinuousClock()
    /// Who holds each configured device (FleetState+Claims.swift).
    var claims: FleetClaims
    let grace: Duration
    /// The held devices as last given to `heldChanges`, and the free slots as last published.
    var lastHeld: Set<BluetoothAddress> = []
    var lastFree: Int?
    var claimTimer: (task: Task<Void, Never>, at: ContinuousClock.Instant)?
    var graceTimer: Task<Void, Never>?
    /// Device messages held back, by packet, and in the order they fall due, one queue per
    /// rank (FleetState+Holdoff.swift).
    var heldBack: [FleetPacketKey: (due: ContinuousClock.Instant, messages: [MQTTMessage])] = [:]
    var heldBackQueues = [FleetHoldQueue](repeating: FleetHoldQueue(), count: FleetState.maximumRank + 1)
    /// The devices whose topics this gateway subscribes to, and the packets held until a newly
    /// followed device's state arrives (FleetState+Following.swift).
    var following: FleetFollowing
    var awaiting: [BluetoothAddress: [FleetPacketKey]] = [:]
    var holdoffTimer: (task: Task<Void, Never>, at: ContinuousClock.Instant)?
    /// When this gateway sent each device message not yet back from the broker, and the round
    /// trip measured on those that came back.
    var sentAt: [FleetPacketKey: ContinuousClock.Instant] = [:]
    var roundTrip = FleetRoundTrip()
    /// `"gateway":"GWID","packet":"` as this gateway ends its device messages.
    private let ownTail: [UInt8]
    /// The devices this gateway holds, whenever that changes (the newest set only).
    nonisolated let heldChanges: AsyncStream<Set<BluetoothAddress>>
    let heldFeed: AsyncStream<Set<BluetoothAddress>>.Continuation

    init(topics: FleetTopics, fleet: GatewayConfig.Fleet, interval: Duration, discovery: Bool, wanted: Set<BluetoothAddress>,
         publisher: Publisher, executor: AdapterExecutor) {
        self.topics = topics
        self.publisher = publisher
        self.discovery = discovery
        self.executor = executor
        view = FleetDeviceView(interval: interval)
        presence = FleetPresence(gatewayID: topics.gatewayID, away: fleet.away)
        following = FleetFollowing(window: presence.window)
        _ = following.pin(wanted)
        claims = FleetClaims(gatewayID: topics.gatewayID, slots: fleet.slots, claimDelay: fleet.claimDelay, wanted: wanted)
        claims.connected = false
        grace = fleet.grace
        members = FleetMembers(own: topics)
        ownTail = Array((JSONValue.object([("gateway", .string(topics.gatewayID))]).text.dropFirst().dropLast() + #","packet":""#).utf8)
        (heldChanges, heldFeed) = AsyncStream.makeStream(of: Set<BluetoothAddress>.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether this gateway publishes the advertisement `packet` of `address` now.
    func decide(_ address: BluetoothAddress, packet: UInt64) -> FleetDeviceView.Decision {
        view.decide(address, packet: packet, now: clock.now)
    }

    /// This gateway heard `address`: its smoothed RSSI goes out when due. A device heard anew
    /// is followed first: its subscriptions go to the broker before the report.
    func heard(_ address: BluetoothAddress, rssi: Int8) async {
        let now = clock.now
        if following.heard(address, now: now) { subscribe(address) }
        let shown = members.shown
        if discovery, announced[address] != shown.generation, announced[address] != nil || announced.count < 10_000 {
            announced[address] = shown.generation
            await publisher.enqueue(HomeAssistantDiscovery.presenceConfig(address, topics: topics, availability: shown.topics))
        }
        guard presence.heard(address, rssi: rssi, now: now) != nil else { return }
        await sendOwnReport(address)
        // Before the device's state is in, this gateway would think itself the nearest.
        if following.awaitingState(address, now: now) == nil { await applyOwnReport(address) }
        if claims.wanted.contains(address) { await settleClaims() }
    }

    /// The RSSI each gateway reports for `address` now.
    func reports(_ address: BluetoothAddress) -> [String: Int] { presence.reports(address, now: clock.now) }

    /// A message on one of the fleet topics (`FleetTopics.subscriptions`, `subscriptions(of:)`);
    /// anything else, or a payload that is not the fleet's, is ignored.
    func receive(_ message: MQTTMessage) async {
        let base = topics.base + "/"
        guard message.topic.hasPrefix(base) else { return await receiveStatus(message) }
        let levels = message.topic.dropFirst(base.count).split(separator: "/", omittingEmptySubsequences: false)
        if levels.count == 3, levels[0] == "gateways", levels[2] == "slots" { return await receiveSlots(String(levels[1]), message) }
        guard levels.count >= 2, let address = Self.address(levels[1]) else { return }
        let now = clock.now
        switch (levels[0], levels.count) {
        case ("claims", 2):
            await receiveClaim(address, message)
        case ("packets", 2):
            if let packet = Self.packet(fromDeviceMessage: message.payload) {
                view.published(address, packet: packet, now: now)
                fleetPublished(address, packet: packet, own: isOwn(message.payload))
            }
        case ("presence", 2):
            guard let aggregate = FleetPresence.aggregate(message.payload) else { return }
            await apply(address, presence.announced(address, nearest: aggregate.nearest.isEmpty ? nil : aggregate.nearest,
                                                    rssi: aggregate.rssi, now: now))
        case ("presence", 3):
            let gateway = String(levels[2])
            // This gateway's own reports are applied when made; one coming back says the
            // device's retained state, sent before it, is in.
            if gateway == topics.gatewayID { return await stateArrived(address) }
            guard !gateway.isEmpty, let rssi = FleetPresence.rssi(fromReport: message.payload) else { return }
            await apply(address, presence.report(address, gateway: gateway, rssi: rssi, now: now))
            if claims.wanted.contains(address) { await settleClaims() }
        default:
            return
        }
    }

    /// Sends `away` for the devices no gateway heard for `away`, each at its deadline, until
    /// the task is cancelled.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.followBroker() }
            group.addTask { await self.expirePresence() }
            group.addTask { await self.expireFollowing() }
            await group.waitForAll()
        }
        claimTimer?.task.cancel()
        graceTimer?.cancel()
        holdoffTimer?.task.cancel()
    }

    private func expirePresence() async {
        while !Task.isCancelled {
            let wait = presence.nextDeadline().map { max(.milliseconds(1), $0 - clock.now) } ?? presence.window
            do { try await Task.sleep(for: wait) } catch { return }
            for (address, message) in presence.expire(now: clock.now) { await publish(address, message) }
        }
    }

    private func apply(_ address: BluetoothAddress, _ aggregate: JSONValue?) async {
        guard let aggregate else { return }
        await publish(address, aggregate)
    }

    /// The aggregate of `address`; with `away`, the device's retained last packet is cleared
    /// too (the broker keeps no packet of a device gone).
    func publish(_ address: BluetoothAddress, _ aggregate: JSONValue) async {
        await publisher.enqueue(MQTTMessage(topic: topics.presence(address), payload: aggregate.bytes, qos: .atLeastOnce, retain: true))
        if FleetPresence.isAway(aggregate) { await publisher.enqueue(MQTTMessage(topic: topics.packets(address), payload: [], retain: true)) }
    }

    /// This gateway's last report of `address` (its smoothed RSSI) to the fleet.
    func sendOwnReport(_ address: BluetoothAddress) async {
        guard let rssi = presence.lastReported(address) else { return }
        await publisher.enqueue(MQTTMessage(topic: topics.presence(address, gateway: topics.gatewayID),
                                            payload: JSONValue.object([("rssi", .int(rssi))]).bytes))
    }

    /// This gateway's last report of `address` counts in its presence.
    func applyOwnReport(_ address: BluetoothAddress) async {
        guard let rssi = presence.lastReported(address) else { return }
        await apply(address, presence.report(address, gateway: topics.gatewayID, rssi: rssi, now: clock.now))
    }

    /// This gateway no longer follows `address`: its presence as this gateway sees it last
    /// goes out when it changed, then what it knew of the device is forgotten.
    func forget(_ address: BluetoothAddress) async {
        if let aggregate = presence.evaluate(address, now: clock.now) { await publish(address, aggregate) }
        presence.forget(address)
        view.forget(address)
    }

    /// `C01122334455` as a topic level.
    static func address(_ level: Substring) -> BluetoothAddress? {
        guard level.utf8.count == 12, let v = UInt64(level, radix: 16) else { return nil }
        return BluetoothAddress(rawValue: v)
    }

    /// The fleet device message's own ending, the whole of a `packets` message:
    /// `..."packet":"<16 hex digits>"}`.
    static func packet(fromDeviceMessage payload: [UInt8]) -> UInt64? {
        let tail = Array(#""packet":""#.utf8)
        let n = payload.count
        guard n >= tail.count + 18, payload[n - 2] == UInt8(ascii: "\""), payload[n - 1] == UInt8(ascii: "}"),
              Array(payload[(n - 18 - tail.count)..<(n - 18)]) == tail else { return nil }
        return UInt64(String(decoding: payload[(n - 18)..<(n - 2)], as: UTF8.self), radix: 16)
    }

    /// Whether a fleet device message is this gateway's: `"gateway":"GWID","packet":"<16 hex digits>"}` at its end.
    private func isOwn(_ payload: [UInt8]) -> Bool {
        let n = payload.count
        guard n >= ownTail.count + 18 else { return false }
        return payload[(n - 18 - ownTail.count)..<(n - 18)].elementsEqual(ownTail)
    }

    /// The fleet's device message: the gateway's own (``AdvertisementPayload/present(_:decoding:)``)
    /// with `gateway`, the id of the gateway that published it, and `packet`, what the fleet
    /// compares (``FleetDeviceView/packet(data:connectable:txPower:)``), at its end.
    static func deviceMessage(_ message: JSONValue, gateway: String, packet: UInt64) -> JSONValue {
        guard case .object(var pairs) = message else { return message }
        pairs += packetMessage(gateway: gateway, packet: packet)
        return .object(pairs)
    }

    /// `gateway` and `packet` of a device message; alone, the retained `packets` message
    /// `{"gateway":"gw1","packet":"<16 hex digits>"}`.
    static func packetMessage(gateway: String, packet: UInt64) -> [(String, JSONValue)] {
        let hex = String(packet, radix: 16, uppercase: true)
        return [("gateway", .string(gateway)), ("packet", .string(String(repeating: "0", count: 16 - hex.count) + hex))]
    }
}
