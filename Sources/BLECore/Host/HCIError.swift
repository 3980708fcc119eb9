import BLEWire

/// Why an HCI command failed. The text names the command and the HCI error code.
///
///     catch let error as HCIError { print(error) }   // "LE Create Connection (0x200D) failed: Command Disallowed (0x0C)"
public enum HCIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The controller answered with a non-zero status.
    case commandFailed(opcode: HCIOpcode, status: HCIStatus)
    /// No Command Complete or Command Status arrived in time.
    case commandTimeout(opcode: HCIOpcode, milliseconds: Int)
    /// The command waited its whole timeout for a command credit and was never sent: the
    /// controller granted none (Num_HCI_Command_Packets 0) and had no command in flight.
    case noCommandCredit(opcode: HCIOpcode, milliseconds: Int)
    /// The transport to the controller is gone; the text says why.
    case transportLost(String)
    /// The caller's task was cancelled before the command was sent: the controller never saw it.
    case cancelled(opcode: HCIOpcode)
    /// The caller's task was cancelled after the command was sent: the caller stopped
    /// waiting, but the controller still carries the command out, and the host still takes
    /// its Command Complete or Command Status (and the command credit it returns).
    case cancelledAfterSending(opcode: HCIOpcode)
    /// The return parameters could not be decoded.
    case invalidReturnParameters(opcode: HCIOpcode, DecodeError)
    /// The controller reported a hardware error; it must be reset.
    case hardwareError(code: UInt8)
    /// The command was pending (queued or sent) when the host reset the controller
    /// (HCI_Reset, as `Central.powerOn()` does): the reset drops it, so it fails at once
    /// instead of waiting for its timeout.
    case controllerReset(opcode: HCIOpcode)

    public var description: String {
        switch self {
        case .commandFailed(let opcode, let status):
            var hint = ""
            switch status {
            case .commandDisallowed: hint = "; the controller is in a state that forbids it (a scan or connection attempt already running?)"
            case .unknownConnectionIdentifier: hint = "; the connection handle is not (or no longer) known to the controller"
            case .memoryCapacityExceeded: hint = "; the controller has no room left (too many connections or list entries)"
            default: break
            }
            return "\(opcode) failed: \(status)\(hint)"
        case .commandTimeout(let opcode, let ms):
            return "\(opcode) got no Command Complete or Command Status within \(ms) ms; the controller may be hung: reset it or check the transport"
        case .noCommandCredit(let opcode, let ms):
            return "\(opcode) was not sent within \(ms) ms: the controller granted no command credit (Num_HCI_Command_Packets 0) with nothing in flight; it may be hung: reset it or check the transport"
        case .transportLost(let why):
            return "the controller transport is lost (\(why)); reopen the adapter"
        case .cancelled(let opcode):
            return "\(opcode) was cancelled before it was sent; the controller never saw it"
        case .cancelledAfterSending(let opcode):
            return "\(opcode) was cancelled after it was sent; the controller still carries it out"
        case .invalidReturnParameters(let opcode, let error):
            return "\(opcode) returned parameters that do not decode: \(error)"
        case .hardwareError(let code):
            return "the controller reported Hardware Error \(code.hex); reset or power-cycle it"
        case .controllerReset(let opcode):
            return "\(opcode) was pending when the host reset the controller (HCI_Reset), which drops it; send it again once the adapter is powered on"
        }
    }
}
