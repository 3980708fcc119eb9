/// An inclusive attribute handle range: the Starting/Ending Handle pair of the Find
/// Information, Read By Type and Read By Group Type requests (Vol 3, Part F, 3.4.3.1, 3.4.4.1,
/// 3.4.4.9), and one entry of the Find By Type Value Response's Handles Information List
/// (Found Attribute Handle, Group End Handle; 3.4.3.4).
///
///     ATTHandleRange(start: 0x0001, end: 0xFFFF)
public struct ATTHandleRange: Hashable, Sendable, CustomStringConvertible {
    public var start: UInt16
    public var end: UInt16
    @inlinable public init(start: UInt16, end: UInt16) { self.start = start; self.end = end }

    /// The whole handle space, 0x0001-0xFFFF.
    public static let all = ATTHandleRange(start: 0x0001, end: 0xFFFF)

    /// "0x0001-0xFFFF".
    public var description: String { "\(start.hex)-\(end.hex)" }
}

/// A handle and its value: an Attribute Data List entry of Read By Type Response
/// (Vol 3, Part F, 3.4.4.2) and one value of Multiple Handle Value Notification (3.4.7.4).
public struct ATTHandleValue: Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]
    @inlinable public init(handle: UInt16, value: [UInt8]) { self.handle = handle; self.value = value }
}

/// One Attribute Data List entry of Read By Group Type Response (Vol 3, Part F, 3.4.4.10):
/// the group's attribute handle, its End Group Handle and the attribute value.
public struct ATTGroupValue: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]
    @inlinable public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle; self.endGroupHandle = endGroupHandle; self.value = value
    }
}

/// One Information Data entry of Find Information Response (Vol 3, Part F, 3.4.3.2).
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    @inlinable public init(handle: UInt16, uuid: BluetoothUUID) { self.handle = handle; self.uuid = uuid }

    public static func == (a: Self, b: Self) -> Bool {
        a.handle == b.handle && a.uuid == b.uuid && a.uuid.width == b.uuid.width
    }
    public func hash(into h: inout Hasher) { h.combine(handle); h.combine(uuid) }
}

/// The Format field of Find Information Response (Vol 3, Part F, 3.4.3.2, Table 3.8).
public enum ATTFindInformationFormat: UInt8, Hashable, Sendable {
    /// Handles with 16-bit Bluetooth UUIDs (4-octet entries).
    case uuid16 = 0x01
    /// Handles with 128-bit UUIDs (18-octet entries).
    case uuid128 = 0x02

    /// Octets per Information Data entry.
    @inlinable public var entrySize: Int { self == .uuid16 ? 4 : 18 }
}

/// One Length Value Tuple of Read Multiple Variable Response (Vol 3, Part F, 3.4.4.12).
/// `length` is the attribute's full value length; `value` may be shorter in the last tuple,
/// which the server cuts off at ATT_MTU - 1 octets.
public struct ATTLengthValue: Hashable, Sendable {
    public var length: UInt16
    public var value: [UInt8]
    /// A tuple whose length is the value's (saturating at 0xFFFF).
    @inlinable public init(value: [UInt8]) {
        self.length = UInt16(clamping: value.count); self.value = value
    }
    @inlinable public init(length: UInt16, value: [UInt8]) { self.length = length; self.value = value }
    /// True when the server sent fewer octets than the value holds.
    @inlinable public var isTruncated: Bool { value.count < Int(length) }
}

/// The Flags of Execute Write Request (Vol 3, Part F, 3.4.6.3, Table 3.35).
public enum ATTExecuteWriteFlags: UInt8, Hashable, Sendable {
    /// Cancel all prepared writes.
    case cancel = 0x00
    /// Immediately write all pending prepared values.
    case write = 0x01
}

/// The 12-octet Authentication Signature ending a Signed Write Command (Vol 3, Part F,
/// 3.4.5.4; Vol 3, Part H, 2.4.5): SignCounter (32 bits) then the 64-bit MAC, little-endian.
public struct ATTSignature: Hashable, Sendable {
    public var signCounter: UInt32
    public var mac: UInt64
    @inlinable public init(signCounter: UInt32, mac: UInt64) { self.signCounter = signCounter; self.mac = mac }
}
