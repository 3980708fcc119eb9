/// Why bytes could not be decoded. Decoders never trap: every malformed, truncated or hostile
/// input ends in one of these.
///
///     do { _ = try HCIPacket(h4: bytes) } catch { print(error) } // "LE Meta: truncated, needs 3 more bytes"
public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended `needed` bytes before `what` was complete.
    case truncated(what: String, needed: Int)
    /// A field of `what` holds a value the specification does not allow.
    case invalidValue(what: String, field: String, value: Int)
    /// `what` is inconsistent in another way (a length field that disagrees with the data...).
    case malformed(what: String, detail: String)

    public var description: String {
        switch self {
        case .truncated(let what, let needed):
            return "\(what): truncated, needs \(needed) more byte\(needed == 1 ? "" : "s")"
        case .invalidValue(let what, let field, let value):
            return "\(what): invalid \(field) 0x\(String(value, radix: 16, uppercase: true))"
        case .malformed(let what, let detail):
            return "\(what): \(detail)"
        }
    }
}
