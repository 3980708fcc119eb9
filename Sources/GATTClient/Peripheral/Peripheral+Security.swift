import BLECore
import ATT
import BLEWire

/// Requests the peer refuses for lack of security: Insufficient Authentication (0x05),
/// Insufficient Encryption (0x0F) or Encryption Key Size Too Short (0x0C) (Vol 3, Part F,
/// 3.4.1.1; Vol 3, Part C, 10.3.1). Every request the app makes leaves through `perform`:
/// with a raiser set, the Peripheral raises the link's security and runs the procedure once
/// more; a second refusal is `GATTError.securityNeeded` with `.refusedAgain`, never a loop.
/// What is asked for follows `SecurityLevel.toAsk(after:keySize:)`, as for L2CAP channels:
/// Encryption Key Size Too Short asks for a 16-octet key at the link's level (on a link whose
/// key is 16 octets already it is `.keySizeRefused` at once, since no pairing gives more), and
/// Insufficient Encryption on an encrypted link starts no pairing (the peer's error stands).
/// Without a raiser the peer's error is thrown as it came (`GATTError.attribute`, whose text
/// names the peer, attribute and handle and says to pair or encrypt the link).
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
            try await securityRaiser(level, nil)
            return nil
        } catch {
            return .securityNeeded(attribute: .insufficientEncryption, needed: level, operation: .waitingForRestore, target: .server,
                                   peer: peerAddress, reason: .failed("\(error)"))
        }
    }

    /// Runs one procedure of an app's request on a bearer of its own (`leaseProcedures`).
    ///
    ///     let value = try await perform(.reading, target) { p async throws(GATTProcedureError) in try await p.readLong(handle: h) }
    @_optimize(none) // Swift 6.3.1 at -O miscompiles this pair: the task jumps to 0 as a procedure returns (docs/fuzzing.md)
    func perform<T>(_ operation: GATTOperation, _ target: GATTTarget,
                    _ body: (GATTProcedures) async throws(GATTProcedureError) -> T) async throws(GATTError) -> T {
        let p = try await leaseProcedures()
        defer { release(p) }
        return try await perform(operation, target, on: p, body)
    }

    /// Runs `body` on `p`; a failure becomes the `GATTError` of `operation` on `target`. A
    /// refusal for lack of security raises the link's security (see above) and runs `body`
    /// once more from the start. A procedure of several requests is safe to run again: a
    /// refused Prepare Write is not queued and the procedure cancels what it queued before
    /// (Execute Write, flags 0x00) before it fails, and a refused Execute Write clears the
    /// server's queue (Vol 3, Part F, 3.4.6.1 and 3.4.6.3).
    @_optimize(none) // see `perform(_:_:_:)`
    func perform<T>(_ operation: GATTOperation, _ target: GATTTarget, on p: GATTProcedures,
                    _ body: (GATTProcedures) async throws(GATTProcedureError) -> T) async throws(GATTError) -> T {
        let raised: SecurityLevel
        do throws(GATTProcedureError) {
            return try await body(p)
        } catch {
            let refusal = failed(p, gattError(error, operation, target))
            guard let code = Self.securityRefusal(refusal), let securityRaiser else { throw refusal }
            let current = await connection?.securityLevel ?? SecurityLevel.none, keySize = await connection?.encryptionKeySize
            guard let needed = Self.levelToRaise(refusedWith: code, at: current, keySize: keySize) else {
                // A 16-octet key cannot grow; for the others the peer's error stands.
                guard code == .encryptionKeySizeTooShort else { throw refusal }
                throw .securityNeeded(attribute: code, needed: current, operation: operation, target: target, peer: peerAddress,
                                      reason: .keySizeRefused(keySize: keySize))
            }
            raised = try await raiseSecurity(securityRaiser, to: needed, code, operation, target)
        }
        do throws(GATTProcedureError) {
            return try await body(p)
        } catch {
            let again = failed(p, gattError(error, operation, target))
            guard let code = Self.securityRefusal(again) else { throw again }
            let reached = await connection?.securityLevel ?? raised
            if code == .encryptionKeySizeTooShort {
                throw .securityNeeded(attribute: code, needed: reached, operation: operation, target: target, peer: peerAddress,
                                      reason: .keySizeRefused(keySize: await connection?.encryptionKeySize))
            }
            throw .securityNeeded(attribute: code, needed: reached.nextToAsk, operation: operation, target: target,
                                  peer: peerAddress, reason: .refusedAgain(reached: reached))
        }
    }

    /// Raises the link's security to `needed` and returns the level asked for. Requests
    /// refused while a raise is under way wait for it (one pairing at a time; it ends within
    /// the 30 s SMP timeout, or when the waiting task is cancelled) and go on with its result.
    private func raiseSecurity(_ raiser: SecurityRaiser, to needed: SecurityRequirement, _ code: ATTErrorCode,
                               _ operation: GATTOperation, _ target: GATTTarget) async throws(GATTError) -> SecurityLevel {
        if let running = securityRaise {
            let cancelled = GATTError.cancelled(operation: operation, target: target)
            switch await running.wait(cancelled: { _ in .failure(.cancelled(cancelled)) }) {
            case .success(let level): return level
            case .failure(.cancelled(let e)): throw e
            case .failure(.failed(let needed, let why)):
                throw .securityNeeded(attribute: code, needed: needed, operation: operation, target: target, peer: peerAddress, reason: why)
            }
        }
        let waiters = Waiters<SecurityLevel, SecurityRaiseOutcome>(executor: executor, scheduler: scheduler)
        securityRaise = waiters
        defer { securityRaise = nil }
        do {
            try await raiser(needed.level, needed.keySize)
            waiters.resumeAll(with: .success(needed.level))
            return needed.level
        } catch {
            var text = "\(error)"
            if needed.keySize != nil { text += "; the link's key is \(await connection?.encryptionKeySize.map { "\($0) octets" } ?? "of unknown size")" }
            let why = SecurityRaiseFailure.failed(text)
            waiters.resumeAll(with: .failure(.failed(needed.level, why)))
            throw .securityNeeded(attribute: code, needed: needed.level, operation: operation, target: target, peer: peerAddress, reason: why)
        }
    }

    /// What to raise the link to when the peer refused a request with `code` (0x05, 0x0F or
    /// 0x0C) on a link at `current` whose key is `keySize` octets, or nil when raising cannot
    /// help: the rule of `SecurityLevel.toAsk(after:keySize:)`, which L2CAP channels follow too.
    ///
    ///     Peripheral.levelToRaise(refusedWith: .encryptionKeySizeTooShort, at: .encrypted, keySize: 7)   // encrypted, 16 octets
    public static func levelToRaise(refusedWith code: ATTErrorCode, at current: SecurityLevel, keySize: Int? = nil) -> SecurityRequirement? {
        code.securityRefusal.flatMap { current.toAsk(after: $0, keySize: keySize) }
    }

    /// The ATT error code of `error` when the peer refused for lack of security.
    static func securityRefusal(_ error: GATTError) -> ATTErrorCode? {
        guard case .attribute(let code, _, _, _) = error, code.needsSecurity else { return nil }
        return code
    }
}

/// How a raise of the link's security ended, as the requests that waited for it see it.
enum SecurityRaiseOutcome: Error {
    case failed(SecurityLevel, SecurityRaiseFailure)
    case cancelled(GATTError)
}
