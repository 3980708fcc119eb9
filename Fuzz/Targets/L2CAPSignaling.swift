import BLECore

/// LE signaling channel commands (Vol 3, Part A, 4). Input: one signaling C-frame payload.
/// Property: a decoded command re-encodes to the same bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let command = try? L2CAPSignalingCommand(bytes: bytes) {
        fuzzCheck(command.bytes == bytes, "re-encoding \(command) changed the bytes")
        if case .connectionParameterUpdateRequest(let range) = command.body {
            _ = range.isValid
            _ = range.hciParameters
        }
    }
    return 0
}
