/// Why a peer refused a request for lack of security, as ATT says it in an Error Response
/// (Core Spec 5.4 Vol 3, Part F, 3.4.1.1: 0x05, 0x0F, 0x0C) and L2CAP in a credit-based
/// connection response (Vol 3, Part A, 4.23 and 4.26: 0x0005, 0x0008, 0x0007).
/// Insufficient Authorization is not one: pairing does not change the peer's decision.
///
///     if let refusal = result.securityRefusal, let needed = level.toAsk(after: refusal, keySize: size) { ... }
public enum SecurityRefusal: Sendable, Hashable, CustomStringConvertible {
    case insufficientAuthentication
    case insufficientEncryption
    case insufficientEncryptionKeySize

    public var description: String {
        switch self {
        case .insufficientAuthentication: return "insufficient authentication"
        case .insufficientEncryption: return "insufficient encryption"
        case .insufficientEncryptionKeySize: return "insufficient encryption key size"
        }
    }
}

/// What a raiser is asked for: the link at `level` at least, with a key of at least `keySize`
/// octets when given (7 to 16, Vol 3, Part H, 2.3.4).
///
///     try await raiser(needed.level, needed.keySize)
public struct SecurityRequirement: Sendable, Hashable, CustomStringConvertible {
    /// Maximum Encryption Key Size, in octets (Vol 3, Part H, 3.5.1).
    public static let maximumKeySize = 16

    public var level: SecurityLevel
    public var keySize: Int?

    public init(level: SecurityLevel, keySize: Int? = nil) {
        self.level = level
        self.keySize = keySize
    }

    /// Whether a link at `level` with a key of `keySize` octets (nil: not known) has what this asks.
    public func isMet(at level: SecurityLevel, keySize: Int?) -> Bool {
        level >= self.level && (self.keySize.map { (keySize ?? 0) >= $0 } ?? true)
    }

    public var description: String { "\(level)" + (keySize.map { " with a \($0)-octet key" } ?? "") }
}
