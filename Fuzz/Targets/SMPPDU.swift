import BLEWire

/// Security Manager PDUs (Vol 3, Part H, 3.5-3.6). Input: one SMP PDU from channel 0x0006.
/// Property: a decoded PDU re-encodes to the same bytes; a failure is a typed error whose
/// kind matches the input (empty, unknown code, or the wrong length for a known code).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        let pdu = try SMPPDU(bytes: bytes)
        fuzzCheck(pdu.bytes == bytes, "re-encoding \(pdu) changed the bytes")
        fuzzCheck(pdu.code.rawValue == bytes[0], "decoded code differs from the first octet")
    } catch {
        switch error {
        case .empty: fuzzCheck(bytes.isEmpty, "non-empty input reported empty")
        case .unknownCode(let c): fuzzCheck(c == bytes[0] && SMPCode(rawValue: c) == nil, "known code reported unknown")
        case .wrongLength(let code, _, let actual): fuzzCheck(code.rawValue == bytes[0] && actual == bytes.count - 1, "wrong length misreported")
        }
    }
    return 0
}
