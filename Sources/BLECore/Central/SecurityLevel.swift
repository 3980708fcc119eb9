/// How well a link is protected (LE security mode 1, Core Spec Vol 3, Part C, 10.2.1):
/// `.none` is level 1, `.encrypted` level 2 (unauthenticated pairing: Just Works), `.authenticated`
/// level 3 (MITM-protected keys), `.secureConnections` level 4 (authenticated LE Secure
/// Connections with a 128-bit key).
///
///     if await link.securityLevel >= .encrypted { ... }
public enum SecurityLevel: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    case none = 1
    case encrypted = 2
    case authenticated = 3
    case secureConnections = 4

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .none: return "not encrypted"
        case .encrypted: return "encrypted"
        case .authenticated: return "encrypted, authenticated"
        case .secureConnections: return "encrypted, authenticated, Secure Connections"
        }
    }
}

extension SecurityLevel {
    /// The level to ask for when a peer refuses something for lack of security on a link at
    /// this level: encryption first; an encrypted link that is still refused needs
    /// MITM-protected keys, and an authenticated one Secure Connections. Which refusal asks
    /// for what is `toAsk(after:keySize:)`.
    ///
    ///     try await raiser(await link.securityLevel.nextToAsk, nil)
    public var nextToAsk: SecurityLevel {
        switch self {
        case .none: return .encrypted
        case .encrypted: return .authenticated
        case .authenticated, .secureConnections: return .secureConnections
        }
    }

    /// What to ask for when the peer refused for lack of security (`refusal`) on a link at
    /// this level whose key is `keySize` octets (nil: not encrypted, or not known), or nil when
    /// nothing this side can raise changes the answer (Vol 3, Part C, 10.3.2). GATT and the
    /// credit-based channels both follow it:
    /// - Insufficient Authentication: the next level (`nextToAsk`); nil at Secure Connections.
    /// - Insufficient Encryption: encryption on a plain link; nil on an encrypted one (a
    ///   MITM-protected key does not cure it, and a person would be asked for a passkey for
    ///   nothing).
    /// - Insufficient Encryption Key Size: the key, not the level, is short: the same level
    ///   (encrypted at least) with a 16-octet key; nil when the key is 16 octets already.
    ///
    ///     SecurityLevel.encrypted.toAsk(after: .insufficientEncryptionKeySize, keySize: 7)   // encrypted, 16 octets
    public func toAsk(after refusal: SecurityRefusal, keySize: Int?) -> SecurityRequirement? {
        switch refusal {
        case .insufficientAuthentication:
            return self == .secureConnections ? nil : SecurityRequirement(level: nextToAsk)
        case .insufficientEncryption:
            return self == .none ? SecurityRequirement(level: .encrypted) : nil
        case .insufficientEncryptionKeySize:
            if let keySize, keySize >= SecurityRequirement.maximumKeySize { return nil }
            return SecurityRequirement(level: max(self, .encrypted), keySize: SecurityRequirement.maximumKeySize)
        }
    }
}

/// Raises a link's security to `needed` with a key of at least `keySize` octets when given
/// (by encrypting with a bond or pairing), or throws why it could not. The module SMP makes
/// one from a Connection: `link.securityRaiser(...)`.
///
///     await link.setSecurityRaiser(link.securityRaiser(agent: agent, store: bonds))
public typealias SecurityRaiser = @Sendable (_ needed: SecurityLevel, _ keySize: Int?) async throws -> Void
