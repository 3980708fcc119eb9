import BLEWire

/// Every ATT PDU (Vol 3, Part F, 3.4). Input: one ATT SDU. Properties:
/// - a decoded PDU re-encodes to the same bytes;
/// - `ATTPDU.notificationHandle(in:)` (array and raw forms) agrees with the full decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let decoded = try? ATTPDU(bytes: bytes)
    if let pdu = decoded {
        fuzzCheck(pdu.bytes == bytes, "re-encoding \(pdu) changed the bytes")
        _ = pdu.opcode
        _ = pdu.handle
    }

    let fast = ATTPDU.notificationHandle(in: bytes)
    let fastRaw = bytes.withUnsafeBytes { ATTPDU.notificationHandle(in: $0) }
    fuzzCheck(fast == fastRaw, "array and raw notification fast paths disagree")
    if case .handleValueNotification(let handle, let value)? = decoded {
        fuzzCheck(fast == handle && Array(bytes[3...]) == value, "fast path disagrees with the decoded notification")
    } else {
        fuzzCheck(fast == nil, "fast path found a notification the decoder did not")
    }
    return 0
}
