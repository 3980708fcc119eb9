#if PAYLOAD_PARSER
import BLECore
#endif

/// The `ble` command's payload-file parser. Input: the file's bytes (any encoding).
/// Property: the parser returns a value or a typed error for every input, never traps.
///
/// scripts/fuzz compiles Sources/ble/Arguments/PayloadParser.swift (self-contained, no
/// imports) into this target and defines PAYLOAD_PARSER.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    #if PAYLOAD_PARSER
    _ = try? PayloadParser.parse(Array(UnsafeBufferPointer(start: data, count: size)))
    #endif
    return 0
}
