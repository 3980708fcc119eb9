import BLECore
import BLEWire

/// What the fleet last published for each device (by any gateway, as the broker showed it, or
/// by this one): decides whether this gateway publishes a report. A packet goes out when the
/// fleet did not publish it among the device's last `packetsPerDevice` packets within
/// `interval`; the newest one again after `interval` is the periodic message (without events). Which gateway heard it plays no
/// part. At most `capacity` devices are remembered; one beyond is published as new.
///
///     var view = FleetDeviceView(interval: .seconds(10)); if view.decide(a, packet: p, now: now) != .skip { publish() }
struct FleetDeviceView {
    enum Decision: Equatable {
        /// The fleet published this packet less than `interval` ago.
        case skip
        /// A packet the fleet has not published last.
        case publish
        /// The same packet, due again: published without its events.
        case periodic
    }

    let interval: Duration
    let capacity: Int
    /// Packets of a device remembered: a packet heard late by one gateway (after a newer one was
    /// published) is still a duplicate.
    static let packetsPerDevice = 4
    /// Per device, its last packets published by the fleet, newest last.
    private(set) var last: [BluetoothAddress: [(packet: UInt64, time: ContinuousClock.Instant)]] = [:]

    init(interval: Duration, capacity: Int = 10_000) {
        self.interval = interval
        self.capacity = max(1, capacity)
    }

    /// Whether this gateway publishes `packet` of `address` now; a publish is recorded at once.
    mutating func decide(_ address: BluetoothAddress, packet: UInt64, now: ContinuousClock.Instant) -> Decision {
        let known = last[address] ?? []
        var decision = Decision.publish
        if let seen = known.last(where: { $0.packet == packet }) {
            guard now - seen.time >= interval else { return .skip }
            if known.last?.packet == packet { decision = .periodic }
        }
        record(address, packet: packet, time: now)
        return decision
    }

    /// A device message of the fleet arrived through the broker (another gateway's or an echo).
    mutating func published(_ address: BluetoothAddress, packet: UInt64, now: ContinuousClock.Instant) {
        if let newest = last[address]?.last, newest.packet == packet, newest.time >= now { return }
        record(address, packet: packet, time: now)
    }

    /// Forgets `address` (this gateway no longer follows it).
    mutating func forget(_ address: BluetoothAddress) { last[address] = nil }

    private mutating func record(_ address: BluetoothAddress, packet: UInt64, time: ContinuousClock.Instant) {
        if last[address] == nil && last.count >= capacity {
            // Entries older than the interval only turn a periodic message into a new one.
            last = last.filter { time - ($0.value.last?.time ?? time) < interval }
            if last.count >= capacity { return }
        }
        var packets = (last[address] ?? []).filter { $0.packet != packet }
        packets.append((packet, time))
        if packets.count > Self.packetsPerDevice { packets.removeFirst(packets.count - Self.packetsPerDevice) }
        last[address] = packets
    }

    /// The identity of an advertisement as the fleet compares it: FNV-1a (64 bit) over the
    /// advertising data, the connectable flag and the TX power. The data holds the packet id or
    /// encryption counter of sensors that have one, so a new reading is a new packet.
    static func packet(data: [UInt8], connectable: Bool, txPower: Int8?) -> UInt64 {
        fnv1a64(data + [connectable ? 1 : 0] + (txPower.map { [1, UInt8(bitPattern: $0)] } ?? [0]))
    }

    /// FNV-1a, 64 bit (offset basis 0xCBF29CE484222325, prime 0x100000001B3).
    static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes {
            hash ^= UInt64(b)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }
}
