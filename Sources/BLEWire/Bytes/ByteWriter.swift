/// Little-endian appends for encoding wire structures.
///
///     var out: [UInt8] = []; out.appendLE(UInt16(0x0C03))
extension Array where Element == UInt8 {
    @inlinable package mutating func appendLE(_ v: UInt8) { append(v) }
    @inlinable package mutating func appendLE(_ v: Int8) { append(UInt8(bitPattern: v)) }
    @inlinable package mutating func appendLE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
    }
    @inlinable package mutating func appendLE24(_ v: UInt32) {
        for i in 0..<3 { append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) }
    }
    @inlinable package mutating func appendLE(_ v: UInt32) {
        for i in 0..<4 { append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) }
    }
    @inlinable package mutating func appendLE(_ v: UInt64) {
        for i in 0..<8 { append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
    @inlinable package mutating func appendLE(_ a: BluetoothAddress) {
        for i in 0..<6 { append(UInt8(truncatingIfNeeded: a.rawValue >> (8 * UInt64(i)))) }
    }
}

/// Hex formatting helpers used in logs and error texts.
extension Sequence where Element == UInt8 {
    /// `"01 03 0c 00"`-style lowercase hex with a separator.
    package func hexString(separator: String = " ") -> String {
        map { byte in
            let s = String(byte, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: separator)
    }
}

extension Array where Element == UInt8 {
    /// Parses hex such as `"01030c00"`, `"01 03 0c 00"` or `"01:03"`; nil on any other character.
    package init?(hex: String) {
        var out: [UInt8] = []
        var high: UInt8?
        for c in hex.unicodeScalars {
            if c == " " || c == ":" || c == "-" || c == "\n" || c == "\t" { continue }
            guard let v = c.properties.numericType != nil || ("a"..."f").contains(c) || ("A"..."F").contains(c)
                ? UInt8(String(c), radix: 16) : nil else { return nil }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        if high != nil { return nil }
        self = out
    }
}
