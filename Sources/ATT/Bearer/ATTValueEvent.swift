/// One attribute value pushed by the server: a Handle Value Notification or Indication, or one
/// value of a Multiple Handle Value Notification (Vol 3, Part F, 3.4.7). The value is a view
/// into the received SDU: no copy is made unless `value` is read.
///
///     bearer.setValueHandler { event in if event.handle == 0x0012 { parse(event.valueBytes) } }
public struct ATTValueEvent: Sendable, Hashable, CustomStringConvertible {
    /// The attribute handle.
    public let handle: UInt16
    /// True for an indication (the bearer confirms it once the handler returns).
    public let isIndication: Bool
    @usableFromInline let bytes: ArraySlice<UInt8>

    /// An event whose value is `sdu[range]` (`range` must lie within `sdu`).
    @inlinable
    public init(handle: UInt16, sdu: [UInt8], valueRange range: Range<Int>, isIndication: Bool) {
        self.init(handle: handle, valueBytes: sdu[range], isIndication: isIndication)
    }

    /// An event whose value is a view of received bytes.
    @inlinable
    public init(handle: UInt16, valueBytes: ArraySlice<UInt8>, isIndication: Bool) {
        self.handle = handle; self.bytes = valueBytes; self.isIndication = isIndication
    }

    /// An event that owns `value`.
    @inlinable
    public init(handle: UInt16, value: [UInt8], isIndication: Bool) {
        self.init(handle: handle, sdu: value, valueRange: value.indices, isIndication: isIndication)
    }

    /// The value, without copying (indices start at `valueBytes.startIndex`, not 0).
    @inlinable public var valueBytes: ArraySlice<UInt8> { bytes }
    /// The value as a new array.
    @inlinable public var value: [UInt8] { Array(bytes) }

    public static func == (a: Self, b: Self) -> Bool {
        a.handle == b.handle && a.isIndication == b.isIndication && a.valueBytes.elementsEqual(b.valueBytes)
    }
    public func hash(into h: inout Hasher) {
        h.combine(handle); h.combine(isIndication); h.combine(bytes.count)
    }

    /// "notification 0x0012: 01 02".
    public var description: String {
        "\(isIndication ? "indication" : "notification") \(handle.hex): \(valueBytes.hexString())"
    }
}
