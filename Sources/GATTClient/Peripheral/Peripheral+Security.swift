/// Raises a link's security to `needed` (by encrypting with a bond or pairing), or throws why
/// it could not. The module SMP makes one from a Connection: `link.securityRaiser(...)`.
public typealias SecurityRaiser = @Sendable (_ needed: SecurityLevel) async throws -> Void

/// Requests the peer refuses for lack of security: Insufficient Encryption, Insufficient
/// Authentication or Encryption Key Size Too Short (Vol 3, Part F, 3.4.1.1; Vol 3, Part C,
/// 10.3.1). With a raiser set, the Peripheral raises the link's security and retries the
/// request once; without one, the peer's error is thrown as it came (its text says the link
/// needs encryption or pairing).
extension Peripheral {
    /// Sets what raises the link's security when the peer asks for more; nil: the peer's
    /// error is thrown as it came.
    ///
    ///     await peripheral.setSecurityRaiser(link.securityRaiser(store: bonds))
    public func setSecurityRaiser(_ raiser: SecurityRaiser?) {
        securityRaiser = raiser
    }

    /// On a restored link: raises security back to what the link had, with the raiser (a
    /// bond re-encrypts without pairing). Returns why it could not, if it could not.
    func restoreSecurity(_ link: Connection) async -> GATTError? {
        let level = await link.securityLevelToRestore
        guard level > .none, let securityRaiser, await link.securityLevel < level else { return nil }
        do {
            try await securityRaiser(level)
            return nil
        } catch {
            return .securityNeeded(attribute: .insufficientEncryption, needed: level, peer: peerAddress, reason: "\(error)")
        }
    }

    /// Runs `body`; when the peer refuses it for lack of security, raises the level once and
    /// runs it again.
    func withSecurityRetry<T>(_ body: () async throws(GATTError) -> T) async throws(GATTError) -> T {
        do {
            return try await body()
        } catch {
            guard let code = error.attErrorCode, let securityRaiser,
                  let needed = Self.levelToRaise(refusedWith: code, at: await connection?.securityLevel ?? SecurityLevel.none) else { throw error }
            do {
                try await securityRaiser(needed)
            } catch {
                throw .securityNeeded(attribute: code, needed: needed, peer: peerAddress, reason: "\(error)")
            }
            return try await body()
        }
    }

    /// The level to raise the link to when the peer refused a request with `code` on a link
    /// at `current` (Vol 3, Part C, 10.3.2), or nil when raising cannot help. Encryption first;
    /// Insufficient Authentication on an encrypted link asks for a MITM-protected key (then
    /// Secure Connections). Insufficient Encryption or Encryption Key Size Too Short on an
    /// encrypted link is not cured by a MITM-protected key: the error stands.
    ///
    ///     Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .encrypted)   // .authenticated
    public static func levelToRaise(refusedWith code: ATTErrorCode, at current: SecurityLevel) -> SecurityLevel? {
        switch code {
        case .insufficientEncryption, .encryptionKeySizeTooShort:
            return current == .none ? .encrypted : nil
        case .insufficientAuthentication:
            switch current {
            case .none: return .encrypted
            case .encrypted: return .authenticated
            case .authenticated: return .secureConnections
            case .secureConnections: return nil
            }
        default:
            return nil
        }
    }
}
