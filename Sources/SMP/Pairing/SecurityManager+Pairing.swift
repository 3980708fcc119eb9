import BLECore
import BLEWire

/// Pairing as the initiator (Vol 3, Part H, 2.3 and 3.6): Phase 1 (feature exchange), Phase 2
/// (LE Secure Connections or legacy), encryption, Phase 3 (key distribution).
extension SecurityManager {
    /// Pairs with the peer and returns the keys. The link is encrypted when it returns.
    /// Throws a `PairingError` naming the peer and the SMP reason.
    ///
    ///     let bond = try await manager.pair(options: PairingOptions(), agent: JustWorksAgent())
    public func pair(options: PairingOptions = PairingOptions(), agent: any PairingAgent = JustWorksAgent()) async throws(PairingError) -> Bond {
        if timedOut { throw PairingError(peer: peer, .channelDead) }
        if let closedError { throw PairingError(peer: peer, .channelClosed(closedError)) }
        guard !running else { throw PairingError(peer: peer, .busy) }
        let attempts = repeatedAttempts()
        if let wait = attempts?.wait(for: peer, now: scheduler.now()) { throw PairingError(peer: peer, .repeatedAttempts(retryAfter: wait)) }
        running = true
        inbox.removeAll()
        pendingFailure = nil
        timeout = options.timeout
        pairingAgent = agent
        keypressesAgreed = false
        defer {
            running = false
            pairingAgent = nil
            enteringPasskey = false
            timer?.cancel()
            timer = nil
        }
        do throws(PairingError.Kind) {
            let bond = try await runPairing(options, agent)
            attempts?.succeeded(peer)
            return bond
        } catch {
            if RepeatedAttempts.counts(error) { attempts?.failed(peer, now: scheduler.now()) }
            switch error {
            case .localFailed(let reason, _): send(.pairingFailed(reason))
            case .cancelled, .crypto, .link: send(.pairingFailed(.unspecifiedReason))
            default: break
            }
            throw PairingError(peer: peer, error)
        }
    }

    private func runPairing(_ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> Bond {
        // Phase 1: Pairing Feature Exchange (2.3.1, 3.5.1, 3.5.2).
        var authReq: AuthenticationRequirements = []
        if options.bonding { authReq.insert(.bonding) }
        if options.mitm || options.secureConnectionsOnly { authReq.insert(.mitm) }
        if options.secureConnections || options.secureConnectionsOnly { authReq.insert(.secureConnections) }
        if options.keypressNotifications { authReq.insert(.keypress) }
        // The OOB flag says this side has the peer's OOB data (3.5.1): a TK counts only when
        // this side offers legacy pairing alone, since a Secure Connections OOB pairing could
        // not use it.
        let offersSC = options.secureConnections || options.secureConnectionsOnly
        let hasOOB = options.peerOOBData != nil || (options.legacyOOBTemporaryKey != nil && !offersSC)
        let preq = PairingParameters(ioCapability: options.ioCapability, oobDataFlag: hasOOB ? 1 : 0, authReq: authReq,
                                     maximumEncryptionKeySize: min(16, max(7, options.maximumKeySize)),
                                     initiatorKeyDistribution: options.bonding ? options.initiatorKeys : [],
                                     responderKeyDistribution: options.bonding ? options.responderKeys : [])
        send(.pairingRequest(preq))
        let first = try await next()
        guard case .pairingResponse(let pres) = first else { throw unexpected(first, expecting: "Pairing Response") }
        guard (7...16).contains(pres.maximumEncryptionKeySize) else {
            throw .localFailed(.invalidParameters, detail: "the peer offered a maximum key size of \(pres.maximumEncryptionKeySize) octets (7 to 16 allowed)")
        }
        let keySize = min(preq.maximumEncryptionKeySize, pres.maximumEncryptionKeySize)
        guard keySize >= max(7, min(16, options.minimumKeySize)) else {
            throw .localFailed(.encryptionKeySize, detail: "the peer allows at most \(keySize)-octet keys, this side needs \(options.minimumKeySize)")
        }
        guard preq.initiatorKeyDistribution.isSuperset(of: pres.initiatorKeyDistribution),
              preq.responderKeyDistribution.isSuperset(of: pres.responderKeyDistribution) else {
            throw .localFailed(.invalidParameters, detail: "the peer asked for keys beyond those offered")
        }
        let sc = preq.authReq.contains(.secureConnections) && pres.authReq.contains(.secureConnections)
        keypressesAgreed = preq.authReq.contains(.keypress) && pres.authReq.contains(.keypress)
        if options.secureConnectionsOnly && !sc {
            throw .localFailed(.authenticationRequirements, detail: "the peer offers only LE legacy pairing and this side is in Secure Connections Only mode")
        }
        let model = AssociationModel.select(initiator: preq, responder: pres, secureConnections: sc)
        if (options.mitm || options.secureConnectionsOnly) && !model.isAuthenticated {
            throw .localFailed(.authenticationRequirements, detail: "MITM protection was asked for, but the IO capabilities (\(preq.ioCapability) here, \(pres.ioCapability) on the peer) allow only Just Works")
        }
        if model == .justWorks, !(await agent.confirmJustWorks(peer: peer)) {
            throw .localFailed(.unspecifiedReason, detail: "the pairing agent refused Just Works pairing")
        }

        // Phase 2 (2.3.5.5, 2.3.5.6), then encryption with the key it made (2.4.4).
        let key: LongTermKey
        if sc {
            key = try await secureConnections(preq, pres, model, keySize, options, agent)
        } else {
            key = try await legacy(preq, pres, model, keySize, options, agent)
        }
        do throws(ConnectionError) {
            try await encryptLink(key)
        } catch {
            throw .link(error)
        }

        // Phase 3: the responder's keys, then ours (3.6.1).
        var bond = try await receiveKeys(pres.responderKeyDistribution, sc: sc, keySize: keySize, model: model)
        if sc { bond.longTermKey = key }
        (bond.localLongTermKey, bond.localSignatureKey) = sendKeys(pres.initiatorKeyDistribution, sc: sc, keySize: keySize, model: model,
                                                                       identity: options.localIdentity)
        return bond
    }

    /// The central's record of failed attempts (2.3.6), shared by all its links.
    func repeatedAttempts() -> RepeatedAttempts? {
        guard let connection else { return nil }
        return connection.assumeIsolated { $0.centralSecurityState { RepeatedAttempts() } } as? RepeatedAttempts
    }

    func unexpected(_ pdu: SMPPDU, expecting: String) -> PairingError.Kind {
        .localFailed(.unspecifiedReason, detail: "expected \(expecting), the peer sent \(pdu.code)")
    }

    /// The six digits of Passkey Entry: shown here or typed here (2.3.5.3).
    func passkey(displayedHere: Bool, _ agent: any PairingAgent) async throws(PairingError.Kind) -> UInt32 {
        if displayedHere {
            let p = UInt32.random(in: 0...999_999)
            await agent.displayPasskey(p, peer: peer)
            return p
        }
        let keypresses = KeypressReporter(isEnabled: keypressesAgreed) { [weak self] notification in
            await self?.sendKeypress(notification)
        }
        enteringPasskey = true
        let entered = await agent.requestPasskey(peer: peer, keypresses: keypresses)
        enteringPasskey = false
        guard let p = entered, p <= 999_999 else {
            throw .localFailed(.passkeyEntryFailed, detail: "no passkey was entered")
        }
        return p
    }

    static func masked(_ key: UInt128, to size: UInt8) -> UInt128 {
        size >= 16 ? key : key & ((1 << (8 * UInt128(size))) - 1)
    }

    func crypto<T>(_ body: () throws(CryptoError) -> T) throws(PairingError.Kind) -> T {
        do throws(CryptoError) { return try body() } catch { throw .crypto(error) }
    }
}
