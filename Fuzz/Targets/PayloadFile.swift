#if PAYLOAD_PARSER
import BLECore
#endif

/// The `ble` command's payload-file parser. Input: the file's bytes (any encoding).
/// Property: the parser returns a value or a typed error for every input, never traps.
///
/// Built only when the parser's source file exists under Sources/ble/ (scripts/fuzz then
/// compiles it into this target and defines PAYLOAD_PARSER); until then the target is
/// skipped by `scripts/fuzz` and this entry point does nothing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    #if PAYLOAD_PARSER
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? PayloadFile.parse(text)
    #endif
    return 0
}
