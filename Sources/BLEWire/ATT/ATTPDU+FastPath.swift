extension ATTPDU {
    /// The attribute handle of a Handle Value Notification (Vol 3, Part F, 3.4.7.1), read
    /// straight from the SDU without decoding it: nil for any other PDU or when too short.
    /// The value is `sdu[3...]`. Meant for the notification hot path.
    ///
    ///     if let handle = ATTPDU.notificationHandle(in: sdu) { route(handle, sdu[3...]) }
    @inlinable
    package static func notificationHandle(in sdu: [UInt8]) -> UInt16? {
        guard sdu.count >= 3, sdu[0] == 0x1B else { return nil }
        return UInt16(sdu[1]) | UInt16(sdu[2]) << 8
    }

    /// The same over raw bytes, for callers that hold a buffer rather than an array.
    @inlinable
    package static func notificationHandle(in sdu: UnsafeRawBufferPointer) -> UInt16? {
        guard sdu.count >= 3, sdu[0] == 0x1B else { return nil }
        return UInt16(sdu[1]) | UInt16(sdu[2]) << 8
    }
}
