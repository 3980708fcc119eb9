import BLEWire
import BLECore

/// Why an ATT operation failed. The text names the opcode, the handle and the error, e.g.
/// "Read Request on handle 0x0003 failed: Insufficient Authentication (0x05); pair or encrypt
/// the link, then retry".
///
///     do { _ = try await bearer.request(.readRequest(handle: 3)) }
///     catch .errorResponse(let code, _, _) where code == .insufficientAuthentication { ... }
public enum ATTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer answered `request` with an Error Response (Vol 3, Part F, 3.4.1.1).
    case errorResponse(code: ATTErrorCode, handle: UInt16, request: ATTOpcode)
    /// No response to `request` within the transaction timeout (Vol 3, Part F, 3.3.3): the
    /// bearer is unusable from then on.
    case transactionTimeout(ATTOpcode)
    /// The link or channel under the bearer went away.
    case linkClosed(LinkError)
    /// The calling task was cancelled while its `request` waited.
    case cancelled(ATTOpcode)
    /// The caller's deadline (`request(_:deadline:)`) passed before the response came; the
    /// bearer stays usable.
    case deadlinePassed(ATTOpcode)
    /// The response to `request` could not be decoded.
    case malformedResponse(request: ATTOpcode, DecodeError)
    /// The peer answered `request` with a PDU of another opcode.
    case unexpectedResponse(request: ATTOpcode, response: ATTOpcode)
    /// `request(_:)` was given a PDU that is not a request.
    case notARequest(ATTOpcode)
    /// `send(command:)` was given a PDU that is not a command.
    case notACommand(ATTOpcode)
    /// The encoded PDU is longer than the bearer's ATT_MTU.
    case pduTooLarge(ATTOpcode, size: Int, mtu: UInt16)
    /// The peer answered `request` with a PDU (`opcode`) longer than ATT_MTU, which no PDU
    /// may be (Vol 3, Part F, 3.2.8); it was not read. The bearer stays usable.
    case oversizedPDU(ATTOpcode, size: Int, mtu: UInt16, request: ATTOpcode)
    /// While `request` waited, the peer sent a PDU of `size` octets, longer than ATT_MTU,
    /// that was refused before its opcode arrived: it may have been the response. The request
    /// fails at once; the bearer stays usable (a late response is discarded) unless no
    /// response comes within the transaction timeout.
    case unidentifiedOversizedPDU(size: Int, mtu: UInt16, request: ATTOpcode)
    /// `request(_:)` was given an Exchange MTU Request after this bearer sent one: the client
    /// sends it once per connection (Vol 3, Part F, 3.4.2.1). `mtu` is the ATT_MTU now.
    case exchangeMTURepeated(mtu: UInt16)

    public var description: String {
        switch self {
        case .errorResponse(let code, let handle, let request):
            let on = handle == 0 ? "" : " on handle \(handle.hex)"
            let hint = code.hint.map { "; \($0)" } ?? ""
            return "\(request.name)\(on) failed: \(code)\(hint)"
        case .transactionTimeout(let request):
            return "\(request.name) got no response within the ATT transaction timeout; the ATT bearer is unusable until the link is reconnected"
        case .linkClosed(let why):
            return "ATT bearer closed: \(why)"
        case .cancelled(let request):
            return "\(request.name) was cancelled by its caller"
        case .deadlinePassed(let request):
            return "\(request.name) got no response before its caller's deadline; the bearer stays usable"
        case .malformedResponse(let request, let why):
            return "the response to \(request.name) is malformed: \(why)"
        case .unexpectedResponse(let request, let response):
            return "\(request.name) was answered with \(response) (protocol error by the peer)"
        case .notARequest(let opcode):
            return "\(opcode) is not an ATT request; use send(command:) for commands"
        case .notACommand(let opcode):
            return "\(opcode) is not an ATT command; use request(_:) for requests"
        case .pduTooLarge(let opcode, let size, let mtu):
            return "\(opcode.name) of \(size) octets exceeds the ATT_MTU of \(mtu); shorten the value or use a long procedure"
        case .oversizedPDU(let opcode, let size, let mtu, let request):
            return "\(request.name) was answered with a \(opcode.name) of \(size) octets, longer than the ATT_MTU of \(mtu) (Vol 3, Part F, 3.2.8); the peer breaks the protocol: retry, and report it to the peer's maker if it persists"
        case .unidentifiedOversizedPDU(let size, let mtu, let request):
            return "\(request.name) failed: while it waited the peer sent a PDU of \(size) octets, longer than the ATT_MTU of \(mtu) (Vol 3, Part F, 3.2.8), refused before its opcode arrived; the peer breaks the protocol: retry, and report it to the peer's maker if it persists"
        case .exchangeMTURepeated(let mtu):
            return "Exchange MTU Request was already sent on this ATT bearer and is sent once per connection (Vol 3, Part F, 3.4.2.1); ATT_MTU is \(mtu): call exchangeMTU(), which returns it"
        }
    }
}

extension ATTError: BLEError {
    /// The caller's cancellation, also when it reached the bearer through its channel.
    public var isCancellation: Bool {
        switch self {
        case .cancelled: return true
        case .linkClosed(let error): return error.isCancellation
        default: return false
        }
    }
}
