/// The Result field of an L2CAP_CREDIT_BASED_RECONFIGURE_RSP (Core Spec 5.4 Vol 3, Part A, 4.28).
///
///     if CreditBasedReconfigureResult(rawValue: result) == .mtuReductionNotAllowed { ... }
public enum CreditBasedReconfigureResult: Hashable, Sendable, CustomStringConvertible {
    case success
    /// 0x0001: a channel's MTU would shrink.
    case mtuReductionNotAllowed
    /// 0x0002: the MPS may shrink only when one channel is reconfigured.
    case mpsReductionNotAllowed
    /// 0x0003: a listed CID is not an enhanced credit-based channel of the link.
    case invalidDestinationCID
    /// 0x0004: other unacceptable parameters (an MTU or MPS below 64, an MPS above 65533).
    case unacceptableParameters
    /// Any other value (reserved).
    case other(UInt16)

    public init(rawValue: UInt16) {
        switch rawValue {
        case 0x0000: self = .success
        case 0x0001: self = .mtuReductionNotAllowed
        case 0x0002: self = .mpsReductionNotAllowed
        case 0x0003: self = .invalidDestinationCID
        case 0x0004: self = .unacceptableParameters
        default: self = .other(rawValue)
        }
    }

    public var rawValue: UInt16 {
        switch self {
        case .success: return 0x0000
        case .mtuReductionNotAllowed: return 0x0001
        case .mpsReductionNotAllowed: return 0x0002
        case .invalidDestinationCID: return 0x0003
        case .unacceptableParameters: return 0x0004
        case .other(let v): return v
        }
    }

    public var description: String {
        let name: String
        switch self {
        case .success: name = "reconfiguration successful"
        case .mtuReductionNotAllowed: name = "reduction in size of MTU not allowed"
        case .mpsReductionNotAllowed: name = "reduction in size of MPS not allowed for more than one channel at a time"
        case .invalidDestinationCID: name = "one or more Destination CIDs invalid"
        case .unacceptableParameters: name = "other unacceptable parameters"
        case .other: name = "reserved result"
        }
        return "\(name) (\(rawValue.hex))"
    }
}
