import BLEWire

/// Security for the credit-based channels of a link (Core Spec 5.4 Vol 3, Part C, 10.2.1;
/// Vol 3, Part A, 4.23 and 4.26): a channel opened with `security:` raises the link to that
/// level first, and a peer that refuses a channel for lack of security (results 0x0005,
/// 0x0007, 0x0008) gets the link raised as `SecurityLevel.toAsk(after:keySize:)` says and the
/// request again, once; when nothing can be raised (0x0008 on an encrypted link, 0x0007 with a
/// 16-octet key, 0x0005 at Secure Connections) the open fails with `.refusedDespiteSecurity`.
/// The raiser is the connection's policy (`setSecurityRaiser`); without one the open fails
/// with `.securityNeeded`, which says pairing is needed.
extension Connection {
    /// Sets what raises the link's security when a channel needs more; nil: opening such a
    /// channel throws `.securityNeeded`. The module SMP makes one (`securityRaiser(...)`).
    ///
    ///     await link.setSecurityRaiser(link.securityRaiser(agent: agent, store: bonds))
    public func setSecurityRaiser(_ raiser: SecurityRaiser?) {
        security.raiser = raiser
    }

    /// Raises the link to `security` before a channel request (nothing when it is there).
    ///
    ///     try await raiseChannelSecurity(to: .encrypted, psm: 0x0080)
    func raiseChannelSecurity(to security: SecurityLevel, psm: UInt16) async throws(L2CAPChannelError) {
        try await raiseSecurity(to: SecurityRequirement(level: security), psm: psm, refusal: nil)
    }

    /// After a failed channel request: rethrows `error` unless the peer refused for lack of
    /// security; then raises the link as the refusal asks, so the caller sends the request
    /// once more. (Two calls around the request rather than one function that takes the
    /// request as a generic closure with typed throws: optimized builds of that form jumped
    /// to a heap address when resuming.)
    ///
    ///     do { return try await open() } catch { try await raiseChannelSecurity(after: error, psm: psm); return try await open() }
    func raiseChannelSecurity(after error: L2CAPChannelError, psm: UInt16) async throws(L2CAPChannelError) {
        guard case .refused(let peer, _, let result) = error, let refusal = result.securityRefusal else { throw error }
        guard let needed = securityLevel.toAsk(after: refusal, keySize: encryptionKeySize) else {
            throw .refusedDespiteSecurity(peer: peer, psm: psm, result: result, level: securityLevel, keySize: encryptionKeySize)
        }
        try await raiseSecurity(to: needed, psm: psm, refusal: result)
    }

    /// Raises the link to `needed` with the raiser; `.securityNeeded` without one, or when it fails.
    private func raiseSecurity(to needed: SecurityRequirement, psm: UInt16, refusal: CreditBasedConnectionResult?) async throws(L2CAPChannelError) {
        guard !needed.isMet(at: securityLevel, keySize: encryptionKeySize) else { return }
        let peer = "\(self.peer.address)"
        guard let raiser = security.raiser else {
            throw .securityNeeded(peer: peer, psm: psm, needed: needed.level, refusal: refusal, reason: nil)
        }
        do {
            try await raiser(needed.level, needed.keySize)
        } catch {
            throw .securityNeeded(peer: peer, psm: psm, needed: needed.level, refusal: refusal, reason: "\(error)")
        }
    }
}

extension CreditBasedConnectionResult {
    /// The refusal a higher security level or a longer key can answer: insufficient
    /// authentication (0x0005), encryption key size (0x0007) or encryption (0x0008); nil for
    /// the others. Insufficient authorization (0x0006) is the peer's decision about this
    /// device, which pairing does not change.
    public var securityRefusal: SecurityRefusal? {
        switch self {
        case .insufficientAuthentication: return .insufficientAuthentication
        case .insufficientEncryptionKeySize: return .insufficientEncryptionKeySize
        case .insufficientEncryption: return .insufficientEncryption
        default: return nil
        }
    }
}
