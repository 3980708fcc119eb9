import BLECore
import BLEWire

/// Who publishes a packet that several gateways hear at once. Every gateway ranks the online
/// gateways that hear a device (the presence reports) the same way: loudest first, then the
/// smaller id. The first publishes a new packet at once; the one ranked `k` holds it back for
/// `k` hold-backs (at most ``maximumRank``) and drops it when the fleet's message of that packet
/// arrives in the meantime. The hold-back follows the broker round trip this gateway measures on
/// its own device messages (``FleetRoundTrip``). A packet only a farther gateway hears still goes
/// out once, from the first of them in the ranking, that much later. A device this gateway
/// has just begun to hear waits for its state first (FleetState+Following.swift).
extension FleetState {
    /// Messages held back at most; beyond, they go out at once.
    static let maximumHeldBack = 10_000
    /// Ranks beyond this one wait as long as it does.
    static let maximumRank = 3

    /// This gateway's place among the online gateways that hear `address`: 0 when none hears
    /// it louder (or as loud with a smaller id).
    func rank(of address: BluetoothAddress) -> Int {
        let heard = reports(address)
        let own = heard[topics.gatewayID] ?? Int.min
        return heard.reduce(0) { n, report in
            let (gateway, rssi) = report
            guard gateway != topics.gatewayID, claims.isLive(gateway), rssi > own || (rssi == own && gateway < topics.gatewayID) else { return n }
            return n + 1
        }
    }

    /// Publishes `messages` (the device message of `packet` of `address`) now when this gateway
    /// ranks first for the device, else after its rank's hold-back unless the fleet published
    /// the packet by then.
    func publish(_ address: BluetoothAddress, packet: UInt64, _ messages: [MQTTMessage]) async {
        let now = clock.now
        let key = FleetPacketKey(address: address, packet: packet)
        if holdUntilState(key, messages, now: now) { return armHoldoff() }
        let k = min(rank(of: address), Self.maximumRank)
        guard k > 0, heldBack.count < Self.maximumHeldBack else { return await send(key, messages, now: now) }
        guard heldBack[key] == nil else { return }
        let due = heldBackQueues[k - 1].append(key, due: now + roundTrip.holdoff * k)
        heldBack[key] = (due, messages)
        armHoldoff()
    }

    /// The fleet published `packet` of `address` (its `packets` message came from the broker;
    /// `own`: this gateway's): a copy held back here is dropped; this gateway's own message
    /// gives a round-trip sample.
    func fleetPublished(_ address: BluetoothAddress, packet: UInt64, own: Bool) {
        let key = FleetPacketKey(address: address, packet: packet)
        heldBack[key] = nil
        if own, let sent = sentAt.removeValue(forKey: key) { roundTrip.sample(clock.now - sent) }
    }

    /// Sends the messages, then the device's retained `packets` message: what a gateway that
    /// begins to hear the device learns first, and what the others drop their copies on.
    private func send(_ key: FleetPacketKey, _ messages: [MQTTMessage], now: ContinuousClock.Instant) async {
        if sentAt.count >= Self.maximumHeldBack { sentAt.removeAll(keepingCapacity: true) }
        sentAt[key] = now
        for m in messages { await publisher.enqueue(m) }
        let last = JSONValue.object(Self.packetMessage(gateway: topics.gatewayID, packet: key.packet))
        await publisher.enqueue(MQTTMessage(topic: topics.packets(key.address), payload: last.bytes, retain: true))
    }

    /// A packet held for its device's state went on (the wait ended).
    private func dropAwaiting(_ key: FleetPacketKey) {
        guard var keys = awaiting[key.address] else { return }
        keys.removeAll { $0 == key }
        awaiting[key.address] = keys.isEmpty ? nil : keys
    }

    /// Arms the timer for the earliest head of the queues, unless it is armed for that time.
    func armHoldoff() {
        guard let due = heldBackQueues.compactMap(\.nextDue).min() else { return }
        if let timer = holdoffTimer, timer.at <= due { return }
        holdoffTimer?.task.cancel()
        let wait = max(.milliseconds(1), due - clock.now)
        holdoffTimer = (Task { [weak self] in
            do { try await Task.sleep(for: wait) } catch { return }
            await self?.holdoffEnded()
        }, due)
    }

    /// Sends the held-back messages that are due and were not published by another gateway.
    private func holdoffEnded() async {
        holdoffTimer = nil
        let now = clock.now
        for q in heldBackQueues.indices {
            while let item = heldBackQueues[q].popDue(now) {
                if q == Self.maximumRank { dropAwaiting(item.key) }
                guard let entry = heldBack[item.key], entry.due == item.due else { continue }
                heldBack[item.key] = nil
                await send(item.key, entry.messages, now: now)
            }
        }
        armHoldoff()
    }
}
