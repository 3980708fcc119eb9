/// 128-bit SMP values (keys, random numbers, confirm values) are `UInt128`s: the Core
/// Specification writes them as numbers, the air carries them least significant octet first
/// (Vol 3, Part H, 3.1) and AES takes them most significant octet first (Vol 3, Part H, 2.2).
extension UInt128 {
    /// The 16 octets, most significant first (the order AES and the toolbox messages use).
    package var bigEndianBytes: [UInt8] { (0..<16).map { UInt8(truncatingIfNeeded: self >> (8 * (15 - $0))) } }

    /// The 16 octets, least significant first (the order on the air).
    package var littleEndianBytes: [UInt8] { (0..<16).map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }

    /// From octets most significant first; at most the last 16 are used.
    package init<C: Collection>(bigEndianBytes bytes: C) where C.Element == UInt8 {
        var v: UInt128 = 0
        for b in bytes { v = v << 8 | UInt128(b) }
        self = v
    }

    /// From octets least significant first; at most the first 16 are used.
    package init<C: Collection>(littleEndianBytes bytes: C) where C.Element == UInt8 {
        var v: UInt128 = 0
        for (i, b) in bytes.prefix(16).enumerated() { v |= UInt128(b) << (8 * i) }
        self = v
    }
}
