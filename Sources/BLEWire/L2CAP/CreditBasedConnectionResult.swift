/// The Result field of an (LE) Credit Based Connection Response (Core Spec 5.4 Vol 3, Part A,
/// 4.23 and 4.26).
///
///     if CreditBasedConnectionResult(rawValue: result) == .psmNotSupported { ... }
public enum CreditBasedConnectionResult: Hashable, Sendable, CustomStringConvertible {
    case success
    /// 0x0002: no server on that SPSM.
    case psmNotSupported
    /// 0x0004: refused, no resources available.
    case noResources
    /// 0x0005
    case insufficientAuthentication
    /// 0x0006
    case insufficientAuthorization
    /// 0x0007
    case insufficientEncryptionKeySize
    /// 0x0008
    case insufficientEncryption
    /// 0x0009: refused, invalid Source CID.
    case invalidSourceCID
    /// 0x000A: refused, Source CID already allocated.
    case sourceCIDAlreadyAllocated
    /// 0x000B: refused, unacceptable parameters.
    case unacceptableParameters
    /// 0x000C (enhanced only): invalid parameters.
    case invalidParameters
    /// Any other value (reserved, or the enhanced "pending" results).
    case other(UInt16)

    public init(rawValue: UInt16) {
        switch rawValue {
        case 0x0000: self = .success
        case 0x0002: self = .psmNotSupported
        case 0x0004: self = .noResources
        case 0x0005: self = .insufficientAuthentication
        case 0x0006: self = .insufficientAuthorization
        case 0x0007: self = .insufficientEncryptionKeySize
        case 0x0008: self = .insufficientEncryption
        case 0x0009: self = .invalidSourceCID
        case 0x000A: self = .sourceCIDAlreadyAllocated
        case 0x000B: self = .unacceptableParameters
        case 0x000C: self = .invalidParameters
        default: self = .other(rawValue)
        }
    }

    public var rawValue: UInt16 {
        switch self {
        case .success: return 0x0000
        case .psmNotSupported: return 0x0002
        case .noResources: return 0x0004
        case .insufficientAuthentication: return 0x0005
        case .insufficientAuthorization: return 0x0006
        case .insufficientEncryptionKeySize: return 0x0007
        case .insufficientEncryption: return 0x0008
        case .invalidSourceCID: return 0x0009
        case .sourceCIDAlreadyAllocated: return 0x000A
        case .unacceptableParameters: return 0x000B
        case .invalidParameters: return 0x000C
        case .other(let v): return v
        }
    }

    public var description: String {
        let name: String
        switch self {
        case .success: name = "success"
        case .psmNotSupported: name = "SPSM not supported"
        case .noResources: name = "refused, no resources available"
        case .insufficientAuthentication: name = "insufficient authentication"
        case .insufficientAuthorization: name = "insufficient authorization"
        case .insufficientEncryptionKeySize: name = "insufficient encryption key size"
        case .insufficientEncryption: name = "insufficient encryption"
        case .invalidSourceCID: name = "invalid Source CID"
        case .sourceCIDAlreadyAllocated: name = "Source CID already allocated"
        case .unacceptableParameters: name = "unacceptable parameters"
        case .invalidParameters: name = "invalid parameters"
        case .other: name = "reserved result"
        }
        return "\(name) (\(rawValue.hex))"
    }
}
