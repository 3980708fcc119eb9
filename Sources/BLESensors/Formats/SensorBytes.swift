import BLECore
import BLEWire

/// Little-endian and big-endian integers at an offset the caller has checked, for the
/// fixed-layout sensor payloads.
enum SensorBytes {
    /// The unsigned little-endian integer of `count` (1...8) bytes at `offset`.
    static func unsignedLE<C: RandomAccessCollection>(_ b: C, _ offset: Int, _ count: Int) -> UInt64 where C.Element == UInt8, C.Index == Int {
        var v: UInt64 = 0
        for i in stride(from: count - 1, through: 0, by: -1) { v = v << 8 | UInt64(b[b.startIndex + offset + i]) }
        return v
    }

    /// The two's-complement little-endian integer of `count` (1...8) bytes at `offset`.
    static func signedLE<C: RandomAccessCollection>(_ b: C, _ offset: Int, _ count: Int) -> Int64 where C.Element == UInt8, C.Index == Int {
        let raw = unsignedLE(b, offset, count)
        let shift = UInt64(64 - 8 * count)
        return Int64(bitPattern: raw << shift) >> Int64(shift)
    }

    /// The unsigned big-endian integer of `count` bytes at `offset`.
    static func unsignedBE<C: RandomAccessCollection>(_ b: C, _ offset: Int, _ count: Int) -> UInt64 where C.Element == UInt8, C.Index == Int {
        var v: UInt64 = 0
        for i in 0..<count { v = v << 8 | UInt64(b[b.startIndex + offset + i]) }
        return v
    }

    /// The address in display order, six bytes as they appear in a payload that carries it
    /// least-significant byte first.
    static func address(reversed b: ArraySlice<UInt8>) -> BluetoothAddress {
        BluetoothAddress(rawValue: unsignedLE(b, 0, 6))
    }

    /// `raw × multiplier ÷ divisor` as JSON: an integer when the divisor is 1.
    static func scaled(_ raw: Int64, multiplier: Int64 = 1, divisor: Int64 = 1) -> JSONValue {
        divisor == 1 ? .int(Int(raw * multiplier)) : .double(Double(raw * multiplier) / Double(divisor))
    }
}
