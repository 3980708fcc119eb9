import BLETransport
import BLEWire

/// `TransportSpec.parse`, the `-d` / `BLE_DEVICE` string. Input: the string's bytes (invalid
/// UTF-8 is repaired as `String(decoding:)` does). Properties:
/// - a refused string is `.invalidSpec` naming that very string, never another error or a trap;
/// - an accepted one prints a canonical `description` that parses back to the same spec.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    switch Result(catching: { () throws(TransportError) in try TransportSpec.parse(text) }) {
    case .failure(let error):
        guard case .invalidSpec(let given, _) = error else {
            fuzzCheck(false, "parse threw \(error), not .invalidSpec")
            return 0
        }
        fuzzCheck(given == text, "the error names \(given.debugDescription), not the input \(text.debugDescription)")
    case .success(let spec):
        let again = Result(catching: { () throws(TransportError) in try TransportSpec.parse(spec.description) })
        fuzzCheck(again == .success(spec), "\(text.debugDescription) parsed to \(spec), whose description \(spec.description.debugDescription) parses to \(again)")
    }
    return 0
}
