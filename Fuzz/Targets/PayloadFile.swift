#if PAYLOAD_PARSER
import Foundation
#endif

/// The `ble` command's payload-file readers and encoder (JSON through FoundationEssentials, YAML
/// through libyaml). Input: one selector byte (even: read as JSON, odd: as YAML), then the
/// file's bytes. Property: every input gives bytes or a typed `PayloadError`, never a trap,
/// an allocation over the 1 MiB limit, or an endless alias expansion.
///
/// scripts/fuzz compiles Sources/ble/Arguments/PayloadParser.swift and PayloadFile.swift into
/// this target, links libyaml and defines PAYLOAD_PARSER.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    #if PAYLOAD_PARSER
    guard size > 0 else { return 0 }
    let name = data[0] & 1 == 0 ? "payload.json" : "payload.yaml"
    _ = try? PayloadFile.parse(Array(UnsafeBufferPointer(start: data + 1, count: size - 1)), name: name)
    #endif
    return 0
}
