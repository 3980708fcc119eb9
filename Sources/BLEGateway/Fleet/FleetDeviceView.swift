import BLECore

/// What the fleet last published for each device (by any gateway, as the broker showed it, or
/// by this one): decides whether this gateway publishes a report. A packet goes out when it
/// differs from the fleet's last one for the device, or when nobody published the device for
/// `interval` (then as the periodic message, without events). Which gateway heard it plays no
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
    private(set) var last: [BluetoothAddress: (packet: UInt64, time: ContinuousClock.Instant)] = [:]

    init(interval: Duration, capacity: Int = 10_000) {
        self.interval = interval
        self.capacity = max(1, capacity)
    }

    /// Whether this gateway publishes `packet` of `address` now; a publish is recorded at once.
    mutating func decide(_ address: BluetoothAddress, packet: UInt64, now: ContinuousClock.Instant) -> Decision {
        let decision: Decision
        if let seen = last[address], seen.packet == packet {
            guard now - seen.time >= interval else { return .skip }
            decision = .periodic
        } else {
            decision = .publish
        }
        record(address, packet: packet, time: now)
        return decision
    }

    /// A device message of the fleet arrived through the broker (another gateway's or an echo).
    mutating func published(_ address: BluetoothAddress, packet: UInt64, now: ContinuousClock.Instant) {
        if let seen = last[address], seen.packet == packet, seen.time >= now { return }
        record(address, packet: packet, time: now)
    }

    private mutating func record(_ address: BluetoothAddress, packet: UInt64, time: ContinuousClock.Instant) {
        if last[address] == nil && last.count >= capacity {
            // Entries older than the interval only turn a periodic message into a new one.
            last = last.filter { time - $0.value.time < interval }
            if last.count >= capacity { return }
        }
        last[address] = (packet, time)
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
