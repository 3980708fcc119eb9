/// A cursor over little-endian wire bytes. Every read checks bounds and throws
/// `DecodeError.truncated` instead of trapping, so decoders built on it are total.
///
///     var r = ByteReader(bytes, context: "LE Connection Complete")
///     let status = try r.u8(); let handle = try r.u16()
///
/// `@usableFromInline` (with its stored properties) so that the decoders of the other modules
/// inline its reads: a `package` type without it keeps its `@inlinable` members' bodies to
/// itself (Swift 6.3), and every `u8()` from another module is then a call.
@usableFromInline package struct ByteReader: Sendable {
    @usableFromInline package let bytes: [UInt8]
    @usableFromInline package var offset: Int
    @usableFromInline package let end: Int
    /// Names the structure being decoded, for error messages.
    @usableFromInline package let context: StaticString

    @inlinable
    package init(_ bytes: [UInt8], context: StaticString) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
        self.context = context
    }

    /// A reader over `bytes[range]` (the range must lie within `bytes`).
    @inlinable
    package init(_ bytes: [UInt8], range: Range<Int>, context: StaticString) {
        self.bytes = bytes
        self.offset = max(0, min(range.lowerBound, bytes.count))
        self.end = max(self.offset, min(range.upperBound, bytes.count))
        self.context = context
    }

    @inlinable package var remaining: Int { end - offset }
    @inlinable package var isAtEnd: Bool { offset >= end }

    @inlinable
    package mutating func need(_ n: Int) throws(DecodeError) {
        if n < 0 || remaining < n { throw .truncated(what: "\(context)", needed: n - remaining) }
    }

    @inlinable
    package mutating func u8() throws(DecodeError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    @inlinable
    package mutating func i8() throws(DecodeError) -> Int8 { Int8(bitPattern: try u8()) }

    @inlinable
    package mutating func u16() throws(DecodeError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    @inlinable
    package mutating func u24() throws(DecodeError) -> UInt32 {
        try need(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    @inlinable
    package mutating func u32() throws(DecodeError) -> UInt32 {
        try need(4)
        defer { offset += 4 }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        return v
    }

    @inlinable
    package mutating func u64() throws(DecodeError) -> UInt64 {
        try need(8)
        defer { offset += 8 }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return v
    }

    /// The next `count` bytes as a new array.
    @inlinable
    package mutating func bytes(_ count: Int) throws(DecodeError) -> [UInt8] {
        try need(count)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Skips `count` bytes.
    @inlinable
    package mutating func skip(_ count: Int) throws(DecodeError) {
        try need(count)
        offset += count
    }

    /// Everything not read yet.
    @inlinable
    package mutating func rest() -> [UInt8] {
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// A 48-bit device address (little-endian on the wire).
    @inlinable
    package mutating func address() throws(DecodeError) -> BluetoothAddress {
        try need(6)
        var v: UInt64 = 0
        for i in 0..<6 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 6
        return BluetoothAddress(rawValue: v)
    }

    /// Throws unless every byte was consumed.
    @inlinable
    package func expectEnd() throws(DecodeError) {
        if remaining != 0 {
            throw .malformed(what: "\(context)", detail: "\(remaining) unexpected trailing byte\(remaining == 1 ? "" : "s")")
        }
    }
}
