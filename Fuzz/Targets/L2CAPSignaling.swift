import BLEWire

/// LE signaling channel commands (Vol 3, Part A, 4). Input: one signaling C-frame payload.
/// Properties: a decoded command re-encodes to the same bytes; the enhanced credit-based
/// commands (4.25-4.28) carry 1 to 5 CIDs (a response may carry none), and their result
/// codes map to a typed result and back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let command = try? L2CAPSignalingCommand(bytes: bytes) {
        fuzzCheck(command.bytes == bytes, "re-encoding \(command) changed the bytes")
        switch command.body {
        case .connectionParameterUpdateRequest(let range):
            _ = range.isValid
            _ = range.hciParameters
        case .creditBasedConnectionRequest(_, _, _, _, let cids), .creditBasedReconfigureRequest(_, _, let cids):
            fuzzCheck((1...5).contains(cids.count), "\(cids.count) CIDs in an enhanced request")
        case .creditBasedConnectionResponse(_, _, _, let result, let cids):
            fuzzCheck(cids.count <= 5, "\(cids.count) CIDs in an enhanced response")
            fuzzCheck(CreditBasedConnectionResult(rawValue: result).rawValue == result, "result 0x\(String(result, radix: 16)) changed")
        case .creditBasedReconfigureResponse(let result):
            fuzzCheck(CreditBasedReconfigureResult(rawValue: result).rawValue == result, "result 0x\(String(result, radix: 16)) changed")
        default:
            break
        }
    }
    return 0
}
