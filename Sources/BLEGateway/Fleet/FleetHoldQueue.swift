import BLECore
import BLEWire

/// One packet of one device, as the fleet tells packets apart.
struct FleetPacketKey: Hashable {
    var address: BluetoothAddress
    var packet: UInt64
}

/// Held-back packets in the order they fall due: a queue whose due times never go down (a due
/// time earlier than the last one's is raised to it), so the head is always the next due.
///
///     var q = FleetHoldQueue(); q.append(key, due: now + .milliseconds(100)); while let k = q.popDue(now) { send(k) }
struct FleetHoldQueue {
    private var items: [(key: FleetPacketKey, due: ContinuousClock.Instant)] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    /// When the head falls due.
    var nextDue: ContinuousClock.Instant? { isEmpty ? nil : items[head].due }

    /// Adds `key`, due at `due` or at the last one's due, whichever is later; returns the due
    /// time given.
    @discardableResult
    mutating func append(_ key: FleetPacketKey, due: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let at = max(due, items.last?.due ?? due)
        items.append((key, at))
        return at
    }

    /// The head when it is due by `now`, removed.
    mutating func popDue(_ now: ContinuousClock.Instant) -> (key: FleetPacketKey, due: ContinuousClock.Instant)? {
        guard head < items.count, items[head].due <= now else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
