/// A Bluetooth UUID. 16- and 32-bit forms are shorthands for the Bluetooth Base UUID
/// (0000xxxx-0000-1000-8000-00805F9B34FB); equality compares the full 128-bit value, and the
/// width it arrived in is kept so it encodes back to the same bytes.
///
///     BluetoothUUID("180D")! == BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!   // true
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// The full 128-bit value.
    public let value: UInt128
    /// Bytes on the wire: 2, 4 or 16.
    public let width: Int

    @usableFromInline static let baseLow: UInt128 = 0x0000_0000_0000_1000_8000_00805F9B34FB

    @inlinable
    public init(uuid16: UInt16) { value = UInt128(uuid16) << 96 | Self.baseLow; width = 2 }
    @inlinable
    public init(uuid32: UInt32) { value = UInt128(uuid32) << 96 | Self.baseLow; width = 4 }
    @inlinable
    public init(uuid128: UInt128) { value = uuid128; width = 16 }

    /// Decodes little-endian wire bytes of length 2, 4 or 16.
    public init?(littleEndian bytes: some Collection<UInt8>) {
        var v: UInt128 = 0
        for (i, b) in bytes.enumerated() { v |= UInt128(b) << (8 * UInt128(i)) }
        switch bytes.count {
        case 2: self.init(uuid16: UInt16(truncatingIfNeeded: v))
        case 4: self.init(uuid32: UInt32(truncatingIfNeeded: v))
        case 16: self.init(uuid128: v)
        default: return nil
        }
    }

    /// Parses `"180D"`, `"0000180D"` or `"0000180D-0000-1000-8000-00805F9B34FB"` (any case).
    public init?(_ string: String) {
        let hex = string.filter { $0 != "-" }
        guard hex.allSatisfy(\.isHexDigit) else { return nil }
        switch hex.count {
        case 4: guard let v = UInt16(hex, radix: 16) else { return nil }; self.init(uuid16: v)
        case 8: guard let v = UInt32(hex, radix: 16) else { return nil }; self.init(uuid32: v)
        case 32:
            guard string.count == 32 || string.count == 36, let v = UInt128(hex, radix: 16) else { return nil }
            self.init(uuid128: v)
        default: return nil
        }
    }

    /// True when the value is derived from the Bluetooth Base UUID.
    public var isSIGDerived: Bool { value & ((1 << 96) - 1) == Self.baseLow }

    /// The 16-bit alias when the value has one.
    public var uuid16: UInt16? {
        guard isSIGDerived, value >> 112 == 0 else { return nil }
        return UInt16(truncatingIfNeeded: value >> 96)
    }

    /// Wire bytes in the width it was created with.
    public var littleEndianBytes: [UInt8] {
        let v = width == 16 ? value : value >> 96
        return (0..<width).map { UInt8(truncatingIfNeeded: v >> (8 * UInt128($0))) }
    }

    /// The same UUID encoded in 128 bits.
    public var as128: BluetoothUUID { BluetoothUUID(uuid128: value) }

    /// "180D" for SIG 16-bit values, "0000FEED" for 32-bit ones, the full form otherwise.
    public var description: String {
        if isSIGDerived {
            let short = UInt32(truncatingIfNeeded: value >> 96)
            let s = String(short, radix: 16, uppercase: true)
            let n = short <= 0xFFFF ? 4 : 8
            return String(repeating: "0", count: n - s.count) + s
        }
        return fullString
    }

    /// "0000180D-0000-1000-8000-00805F9B34FB".
    public var fullString: String {
        let s = String(value, radix: 16, uppercase: true)
        let h = Array(String(repeating: "0", count: 32 - s.count) + s)
        return [h[0..<8], h[8..<12], h[12..<16], h[16..<20], h[20..<32]].map { String($0) }.joined(separator: "-")
    }

    public static func == (a: Self, b: Self) -> Bool { a.value == b.value }
    public func hash(into h: inout Hasher) { h.combine(value) }
}
