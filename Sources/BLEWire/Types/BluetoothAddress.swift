/// A 48-bit Bluetooth device address (BD_ADDR). Stored as the integer whose little-endian
/// bytes are the wire form; printed most significant byte first, as every tool does.
///
///     let a = BluetoothAddress("F0:F1:F2:F3:F4:F5")!   // a.description == "F0:F1:F2:F3:F4:F5"
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Bits 0..47; bits 48..63 are always zero.
    public let rawValue: UInt64

    @inlinable
    public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Parses `"AA:BB:CC:DD:EE:FF"` (or with `-`); nil for anything else.
    public init?(_ string: String) {
        let parts = string.split(whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var v: UInt64 = 0
        for p in parts {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            v = v << 8 | UInt64(b)
        }
        self.init(rawValue: v)
    }

    /// Wire bytes, least significant first.
    public var littleEndianBytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) } }

    public static let zero = BluetoothAddress(rawValue: 0)

    /// "C0:11:22:33:44:55": most significant byte first, upper-case hex. Written into the
    /// string's own storage (it is formatted for every message of a gateway).
    public var description: String {
        let digits: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 17) { out in
            var n = 0
            for i in (0..<6).reversed() {
                if i < 5 { out[n] = UInt8(ascii: ":"); n += 1 }
                let b = Int(truncatingIfNeeded: rawValue >> (8 * UInt64(i))) & 0xFF
                out[n] = digits.utf8Start[b >> 4]
                out[n + 1] = digits.utf8Start[b & 0x0F]
                n += 2
            }
            return n
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The LE address type as HCI carries it (Core Spec Vol 4, Part E, 7.8.12: Peer_Address_Type).
public enum LEAddressType: UInt8, Sendable, Hashable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01
    /// Public identity address (resolved by the controller's resolving list).
    case publicIdentity = 0x02
    /// Random (static) identity address (resolved by the controller's resolving list).
    case randomIdentity = 0x03

    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .publicIdentity: return "public-id"
        case .randomIdentity: return "random-id"
        }
    }

    /// True for the two random kinds.
    public var isRandom: Bool { self == .random || self == .randomIdentity }
}

/// The sub-type of a random address, from its two most significant bits (Vol 6, Part B, 1.3.2).
public enum RandomAddressKind: Sendable, Hashable, CustomStringConvertible {
    case `static`, resolvablePrivate, nonResolvablePrivate, reserved

    public var description: String {
        switch self {
        case .static: return "static"
        case .resolvablePrivate: return "resolvable"
        case .nonResolvablePrivate: return "non-resolvable"
        case .reserved: return "reserved"
        }
    }
}

/// An LE device address together with its type: what identifies a peer on the air.
///
///     let peer = LEAddress("C0:11:22:33:44:55", type: .random)!   // "C0:11:22:33:44:55 (random static)"
public struct LEAddress: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    public var type: LEAddressType

    @inlinable
    public init(_ address: BluetoothAddress, type: LEAddressType) {
        self.address = address
        self.type = type
    }

    public init?(_ string: String, type: LEAddressType) {
        guard let a = BluetoothAddress(string) else { return nil }
        self.init(a, type: type)
    }

    /// Parses `"AA:BB:CC:DD:EE:FF"` with an optional `/public` or `/random` suffix (default random,
    /// the common case for LE peripherals).
    public init?(parsing string: String) {
        let parts = string.split(separator: "/", maxSplits: 1)
        var type = LEAddressType.random
        if parts.count == 2 {
            switch parts[1].lowercased() {
            case "public", "p": type = .public
            case "random", "r": type = .random
            default: return nil
            }
        }
        self.init(String(parts[0]), type: type)
    }

    /// For random addresses, which kind the top two bits say it is.
    public var randomKind: RandomAddressKind? {
        guard type == .random else { return nil }
        switch rawTopBits {
        case 0b11: return .static
        case 0b01: return .resolvablePrivate
        case 0b00: return .nonResolvablePrivate
        default: return .reserved
        }
    }

    private var rawTopBits: UInt64 { (address.rawValue >> 46) & 0b11 }

    public var description: String {
        if let kind = randomKind { return "\(address) (random \(kind))" }
        return "\(address) (\(type))"
    }
}
