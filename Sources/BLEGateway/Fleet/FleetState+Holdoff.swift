import BLECore
import BLEWire

/// Who publishes a packet that several gateways hear at once: the gateway that hears the device
/// best (the presence reports) publishes at once; the others hold their message back for
/// `holdoff` and drop it when the fleet's message of that packet arrives in the meantime. A
/// packet only a farther gateway hears still goes out, `holdoff` later.
extension FleetState {
    /// How long a gateway that is not the device's loudest holds a new packet back: more than
    /// the broker's round trip on a LAN, little for a reading.
    static let holdoff = Duration.milliseconds(100)
    /// Messages held back at most; beyond, they go out at once.
    static let maximumHeldBack = 10_000

    /// Publishes `messages` (the device message of `packet` of `address`) now when this gateway
    /// hears the device best, else after ``holdoff`` unless the fleet published the packet.
    func publish(_ address: BluetoothAddress, packet: UInt64, _ messages: [MQTTMessage]) async {
        let now = clock.now
        let heard = reports(address)
        let best = heard.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
        guard let best, best != topics.gatewayID, heldBack.count < Self.maximumHeldBack else {
            for m in messages { await publisher.enqueue(m) }
            return
        }
        // A packet of this device still held back is not the fleet's newest: it goes out now.
        if let earlier = heldBack[address] { for m in earlier.messages { await publisher.enqueue(m) } }
        let due = now + Self.holdoff
        heldBack[address] = (packet, due, messages)
        heldBackOrder.append((address, packet, due))
        guard holdoffTimer == nil else { return }
        armHoldoff(at: due)
    }

    /// The fleet published `packet` of `address`: a message of it held back here is dropped.
    func fleetPublished(_ address: BluetoothAddress, packet: UInt64) {
        if heldBack[address]?.packet == packet { heldBack[address] = nil }
    }

    private func armHoldoff(at due: ContinuousClock.Instant) {
        let wait = max(.milliseconds(1), due - clock.now)
        holdoffTimer = Task { [weak self] in
            do { try await Task.sleep(for: wait) } catch { return }
            await self?.holdoffEnded()
        }
    }

    /// Sends the held-back messages that are due and were not published by another gateway.
    private func holdoffEnded() async {
        holdoffTimer = nil
        let now = clock.now
        while heldBackHead < heldBackOrder.count, heldBackOrder[heldBackHead].due <= now {
            let (address, packet, due) = heldBackOrder[heldBackHead]
            heldBackHead += 1
            guard let entry = heldBack[address], entry.packet == packet, entry.due == due else { continue }
            heldBack[address] = nil
            for m in entry.messages { await publisher.enqueue(m) }
        }
        if heldBackHead == heldBackOrder.count {
            heldBackOrder.removeAll(keepingCapacity: true)
            heldBackHead = 0
        } else if heldBackHead > 1024 {
            heldBackOrder.removeFirst(heldBackHead)
            heldBackHead = 0
        }
        if heldBackHead < heldBackOrder.count { armHoldoff(at: heldBackOrder[heldBackHead].due) }
    }
}
