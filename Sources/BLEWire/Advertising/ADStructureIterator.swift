/// One structure located in raw advertising bytes, without copying: its AD type and the byte
/// range of its payload within the buffer that was walked.
public struct ADStructureSpan: Hashable, Sendable {
    public var type: UInt8
    public var payload: Range<Int>
    @inlinable public init(type: UInt8, payload: Range<Int>) { self.type = type; self.payload = payload }
}

/// Walks advertising data (Core Specification Vol 3, Part C, 11) in place, for the scan hot
/// loop: no allocation, no copy. Stops at a zero length octet (the rest is padding) and at a
/// structure whose length runs past the end (it is not yielded).
///
///     bytes.withUnsafeBytes { raw in
///         var it = ADStructureIterator(raw)
///         while let s = it.next() { if s.type == ADType.completeLocalName { ... } }
///     }
///
/// The buffer must stay valid while the iterator is used.
public struct ADStructureIterator: IteratorProtocol {
    public let buffer: UnsafeRawBufferPointer
    /// Offset of the next length octet.
    public var offset: Int
    @usableFromInline let end: Int

    /// Iterates `buffer[range]` (clamped to the buffer).
    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer, range: Range<Int>? = nil) {
        self.buffer = buffer
        let r = range ?? 0..<buffer.count
        self.end = max(0, min(r.upperBound, buffer.count))
        self.offset = max(0, min(r.lowerBound, end))
    }

    @inlinable
    public mutating func next() -> ADStructureSpan? {
        let o = offset
        guard o < end else { return nil }
        let length = Int(buffer[o])
        // Zero length: end of significant data. Past the end: truncated, not yielded.
        guard length != 0, length <= end - o - 1 else { offset = end; return nil }
        offset = o + 1 + length
        return ADStructureSpan(type: buffer[o + 1], payload: (o + 2)..<(o + 1 + length))
    }
}

extension AdvertisingData {
    /// Calls `body` with the type and payload range of each well-formed structure in
    /// `buffer[range]` until `body` returns false. No allocation. See `ADStructureIterator`.
    ///
    ///     AdvertisingData.forEachStructure(in: raw) { type, payload in type != ADType.flags }
    @inlinable
    public static func forEachStructure<E: Error>(
        in buffer: UnsafeRawBufferPointer, range: Range<Int>? = nil,
        _ body: (_ type: UInt8, _ payload: Range<Int>) throws(E) -> Bool
    ) throws(E) {
        var it = ADStructureIterator(buffer, range: range)
        while let s = it.next() {
            if try !body(s.type, s.payload) { return }
        }
    }
}
