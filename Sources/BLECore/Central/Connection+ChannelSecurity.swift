/// Security for the credit-based channels of a link (Core Spec 5.4 Vol 3, Part C, 10.2.1;
/// Vol 3, Part A, 4.23 and 4.26): a channel opened with `security:` raises the link to that
/// level first, and a peer that refuses a channel for lack of security (results 0x0005,
/// 0x0007, 0x0008) gets the link raised one step and the request again, once. The raiser is
/// the connection's policy (`setSecurityRaiser`); without one the open fails with
/// `.securityNeeded`, which says pairing is needed.
extension Connection {
    /// Sets what raises the link's security when a channel needs more; nil: opening such a
    /// channel throws `.securityNeeded`. The module SMP makes one (`securityRaiser(...)`).
    ///
    ///     await link.setSecurityRaiser(link.securityRaiser(agent: agent, store: bonds))
    public func setSecurityRaiser(_ raiser: SecurityRaiser?) {
        security.raiser = raiser
    }

    /// Runs `open` on a link at `security` at least; when the peer refuses the channel for
    /// lack of security, raises the link a step (or to `security`, if higher) and runs it again.
    func withChannelSecurity<T>(psm: UInt16, security: SecurityLevel,
                                _ open: () async throws(L2CAPChannelError) -> T) async throws(L2CAPChannelError) -> T {
        try await raiseSecurity(to: security, psm: psm, refusal: nil)
        do {
            return try await open()
        } catch {
            guard case .refused(_, _, let result) = error, result.isSecurityRefusal else { throw error }
            let needed = max(security, securityLevel.nextToAsk)
            // At the top level already: asking again cannot change the answer.
            guard securityLevel < needed else { throw error }
            try await raiseSecurity(to: needed, psm: psm, refusal: result)
            return try await open()
        }
    }

    /// Raises the link to `level` with the raiser; `.securityNeeded` without one, or when it fails.
    private func raiseSecurity(to level: SecurityLevel, psm: UInt16, refusal: CreditBasedConnectionResult?) async throws(L2CAPChannelError) {
        guard securityLevel < level else { return }
        let peer = "\(self.peer.address)"
        guard let raiser = security.raiser else {
            throw .securityNeeded(peer: peer, psm: psm, needed: level, refusal: refusal, reason: nil)
        }
        do {
            try await raiser(level, nil)
        } catch {
            throw .securityNeeded(peer: peer, psm: psm, needed: level, refusal: refusal, reason: "\(error)")
        }
    }
}

extension CreditBasedConnectionResult {
    /// A refusal that a higher security level can fix: insufficient authentication (0x0005),
    /// encryption key size (0x0007) or encryption (0x0008). Insufficient authorization
    /// (0x0006) is the peer's decision about this device, which pairing does not change.
    public var isSecurityRefusal: Bool {
        self == .insufficientAuthentication || self == .insufficientEncryptionKeySize || self == .insufficientEncryption
    }
}
