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
            guard let code = error.attErrorCode,
                  code == .insufficientEncryption || code == .insufficientAuthentication || code == .encryptionKeySizeTooShort,
                  let securityRaiser else { throw error }
            let needed = (await connection?.securityLevel ?? SecurityLevel.none).nextToAsk
            do {
                try await securityRaiser(needed)
            } catch {
                throw .securityNeeded(attribute: code, needed: needed, peer: peerAddress, reason: "\(error)")
            }
            return try await body()
        }
    }
}
