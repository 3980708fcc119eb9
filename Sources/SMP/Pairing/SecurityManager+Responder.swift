import BLECore
import BLEWire

/// How a peripheral answers the central's Pairing Requests (`Connection.acceptPairing`).
struct PairingResponder: Sendable {
    var options: PairingOptions
    var agent: any PairingAgent
    var store: (any BondStore)?
    var onResult: (@Sendable (Result<Bond, PairingError>) -> Void)?
}

/// Pairing as the responder (Vol 3, Part H, 2.3 and 3.6; this side is the peripheral): the
/// Pairing Response to the central's request, Phase 2 in the responder's order, the LE Long
/// Term Key Request answered with the key it made, then Phase 3 with this side's keys first.
extension SecurityManager {
    /// Starts answering `preq` (on the executor, as it arrives): the procedure runs in a task
    /// of its own and reports to the responder's `onResult`.
    func startResponding(to preq: PairingParameters, _ responder: PairingResponder) {
        if timedOut || closedError != nil { return }
        if repeatedAttempts()?.wait(for: peer, now: scheduler.now()) != nil {
            send(.pairingFailed(.repeatedAttempts))
            return
        }
        running = true
        inbox.removeAll()
        pendingFailure = nil
        failedDuringEncryption = nil
        timeout = responder.options.timeout
        pairingAgent = responder.agent
        keypressesAgreed = false
        // The SMP timer runs from the Pairing Request on (3.4): an agent that never answers
        // still ends in a timeout.
        restartTimer()
        responderTask = Task { await self.respond(to: preq, responder) }
    }

    private func respond(to preq: PairingParameters, _ responder: PairingResponder) async {
        let attempts = repeatedAttempts()
        let result: Result<Bond, PairingError>
        do throws(PairingError.Kind) {
            var (bond, bonded) = try await runResponder(preq, responder.options, responder.agent)
            attempts?.succeeded(peer)
            // Only a bonding pairing (both sides set Bonding, 3.5.1) is kept.
            if let store = responder.store, bonded {
                do throws(BondStoreError) { try store.save(bond) } catch {
                    throw .localFailed(.unspecifiedReason, detail: "paired, but the bond was not saved: \(error)")
                }
                bond = store.bond(for: bond.peer) ?? bond
            }
            result = .success(bond)
        } catch {
            if RepeatedAttempts.counts(error) { attempts?.failed(peer, now: scheduler.now()) }
            switch error {
            case .localFailed(let reason, _): send(.pairingFailed(reason))
            case .cancelled, .crypto, .link: send(.pairingFailed(.unspecifiedReason))
            default: break
            }
            result = .failure(PairingError(peer: peer, error))
        }
        running = false
        awaitingEncryption = false
        pairingAgent = nil
        enteringPasskey = false
        responderTask = nil
        timer?.cancel()
        timer = nil
        responder.onResult?(result)
    }

    private func runResponder(_ preq: PairingParameters, _ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> (Bond, bonded: Bool) {
        // Phase 1: the Pairing Response (2.3.1, 3.5.2).
        guard (7...16).contains(preq.maximumEncryptionKeySize) else {
            throw .localFailed(.invalidParameters, detail: "the central offered a maximum key size of \(preq.maximumEncryptionKeySize) octets (7 to 16 allowed)")
        }
        let offersSC = options.secureConnections || options.secureConnectionsOnly
        var authReq: AuthenticationRequirements = []
        let bonding = options.bonding && preq.authReq.contains(.bonding)
        if bonding { authReq.insert(.bonding) }
        if options.mitm || options.secureConnectionsOnly { authReq.insert(.mitm) }
        if offersSC { authReq.insert(.secureConnections) }
        if options.keypressNotifications { authReq.insert(.keypress) }
        let hasOOB = options.peerOOBData != nil || (options.legacyOOBTemporaryKey != nil && !offersSC)
        // Keys: only those the central offered and this side allows; none without bonding (3.6.1).
        let pres = PairingParameters(ioCapability: options.ioCapability, oobDataFlag: hasOOB ? 1 : 0, authReq: authReq,
                                     maximumEncryptionKeySize: min(16, max(7, options.maximumKeySize)),
                                     initiatorKeyDistribution: bonding ? preq.initiatorKeyDistribution.intersection(options.initiatorKeys) : [],
                                     responderKeyDistribution: bonding ? preq.responderKeyDistribution.intersection(options.responderKeys) : [])
        let keySize = min(preq.maximumEncryptionKeySize, pres.maximumEncryptionKeySize)
        guard keySize >= max(7, min(16, options.minimumKeySize)) else {
            throw .localFailed(.encryptionKeySize, detail: "the central allows at most \(keySize)-octet keys, this side needs \(options.minimumKeySize)")
        }
        let sc = preq.authReq.contains(.secureConnections) && pres.authReq.contains(.secureConnections)
        if options.secureConnectionsOnly && !sc {
            throw .localFailed(.authenticationRequirements, detail: "the central offers only LE legacy pairing and this side is in Secure Connections Only mode")
        }
        let model = AssociationModel.select(initiator: preq, responder: pres, secureConnections: sc)
        if (options.mitm || options.secureConnectionsOnly) && !model.isAuthenticated {
            throw .localFailed(.authenticationRequirements, detail: "MITM protection is required here, but the IO capabilities (\(pres.ioCapability) here, \(preq.ioCapability) on the central) allow only Just Works")
        }
        if model == .outOfBand, !sc, options.legacyOOBTemporaryKey == nil {
            throw .localFailed(.oobNotAvailable, detail: "LE legacy OOB pairing needs the TK shared with the central (PairingOptions.legacyOOBTemporaryKey)")
        }
        if model == .justWorks, !(await agent.confirmJustWorks(peer: peer)) {
            throw .localFailed(.pairingNotSupported, detail: "the pairing agent refused Just Works pairing")
        }
        keypressesAgreed = preq.authReq.contains(.keypress) && pres.authReq.contains(.keypress)
        send(.pairingResponse(pres))

        // Phase 2 in the responder's order (2.3.5.5, 2.3.5.6); its last PDU goes out once the
        // key is ready for the central's LE Long Term Key Request (2.4.4).
        let (key, last) = sc ? try await respondSecureConnections(preq, pres, model, keySize, options, agent)
                             : try await respondLegacy(preq, pres, model, keySize, options, agent)
        try await acceptEncryption(key, then: last)

        // Phase 3: this side's keys first, then the central's (3.6.1).
        let given = sendKeys(pres.responderKeyDistribution, sc: sc, keySize: keySize, model: model, identity: options.localIdentity)
        var bond = try await receiveKeys(pres.initiatorKeyDistribution, sc: sc, keySize: keySize, model: model)
        if sc { bond.longTermKey = key }
        bond.localLongTermKey = given.ltk
        bond.localSignatureKey = given.csrk
        return (bond, bonding)
    }

    /// Waits for the central's encryption with `key`, sending `last` once the answer to its
    /// LE Long Term Key Request is in place.
    private func acceptEncryption(_ key: LongTermKey, then last: SMPPDU) async throws(PairingError.Kind) {
        guard let acceptLinkEncryption else {
            throw .localFailed(.unspecifiedReason, detail: "this Security Manager has no link to encrypt")
        }
        awaitingEncryption = true
        defer { awaitingEncryption = false }
        do throws(ConnectionError) {
            try await acceptLinkEncryption(key) { [weak self] in self?.assumeIsolated { $0.send(last) } }
        } catch {
            if let reason = failedDuringEncryption { throw .peerFailed(reason) }
            if timedOut { throw .timeout }
            if let closedError { throw .channelClosed(closedError) }
            throw .link(error)
        }
    }

    /// LE legacy pairing phase 2 as the responder (2.3.5.5): Mconfirm in, Sconfirm out,
    /// Mrand in and checked; returns the STK and the Pairing Random (Srand) still to send.
    private func respondLegacy(_ preq: PairingParameters, _ pres: PairingParameters, _ model: AssociationModel, _ keySize: UInt8,
                               _ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> (LongTermKey, SMPPDU) {
        var tk: UInt128 = 0
        switch model {
        case .passkeyEntry(_, let responderDisplays):
            tk = UInt128(try await passkey(displayedHere: responderDisplays, agent))
        case .outOfBand:
            tk = options.legacyOOBTemporaryKey ?? 0
        case .justWorks, .numericComparison:
            break
        }
        let ia = peer.address, ra = local.address
        let preqBytes = SMPPDU.pairingRequest(preq).bytes, presBytes = SMPPDU.pairingResponse(pres).bytes
        let iat: UInt8 = peer.type.isRandom ? 1 : 0, rat: UInt8 = local.type.isRandom ? 1 : 0
        let confirm = { (r: UInt128) throws(CryptoError) -> UInt128 in
            try SMPToolbox.c1(k: tk, r: r, preq: preqBytes, pres: presBytes, iat: iat, ia: ia, rat: rat, ra: ra)
        }
        let confirmPDU = try await next()
        guard case .pairingConfirm(let mconfirm) = confirmPDU else { throw unexpected(confirmPDU, expecting: "Pairing Confirm") }
        let srand = UInt128.random(in: .min ... .max)
        send(.pairingConfirm(try crypto { () throws(CryptoError) in try confirm(srand) }))
        let mrand = try await nextRandom()
        guard try crypto({ () throws(CryptoError) in try confirm(mrand) }) == mconfirm else {
            throw .localFailed(.confirmValueFailed, detail: "the central's confirm value Mconfirm does not match its Mrand\(model == .outOfBand ? " (wrong OOB key?)" : tk != 0 ? " (wrong passkey?)" : "")")
        }
        let stk = try crypto { () throws(CryptoError) in try SMPToolbox.s1(k: tk, r1: srand, r2: mrand) }
        let key = LongTermKey(key: Self.masked(stk, to: keySize), ediv: 0, rand: 0, keySize: keySize,
                              authenticated: model.isAuthenticated, secureConnections: false)
        return (key, .pairingRandom(srand))
    }

    /// LE Secure Connections phase 2 as the responder (2.3.5.6): PKa in, PKb out, the
    /// authentication stage 1 of the model, Ea in and checked; returns the LTK and the
    /// Pairing DHKey Check (Eb) still to send.
    private func respondSecureConnections(_ preq: PairingParameters, _ pres: PairingParameters, _ model: AssociationModel, _ keySize: UInt8,
                                          _ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> (LongTermKey, SMPPDU) {
        // Public key exchange (2.3.5.6.1): the initiator's first.
        let keyPDU = try await next()
        guard case .pairingPublicKey(let peerKey) = keyPDU else { throw unexpected(keyPDU, expecting: "Pairing Public Key") }
        let own = try crypto { () throws(CryptoError) in try ownKeyPair() }
        guard peerKey.x != own.publicKey.x else {
            throw .localFailed(.invalidParameters, detail: "the central sent back this side's own public key")
        }
        let dhKey: [UInt8]
        do throws(CryptoError) {
            dhKey = try own.sharedSecret(with: peerKey)
        } catch {
            if error == .invalidPublicKey { throw .localFailed(.dhKeyCheckFailed, detail: "\(error)") }
            throw .crypto(error)
        }
        send(.pairingPublicKey(own.publicKey))
        let pka = peerKey.x, pkb = own.publicKey.x

        // Authentication stage 1 (2.3.5.6.2 to 2.3.5.6.4).
        var na: UInt128 = 0, nb: UInt128 = 0, ra: UInt128 = 0, rb: UInt128 = 0
        switch model {
        case .justWorks, .numericComparison:
            nb = UInt128.random(in: .min ... .max)
            send(.pairingConfirm(try crypto { () throws(CryptoError) in try SMPToolbox.f4(u: pkb, v: pka, x: nb, z: 0) }))
            na = try await nextRandom()
            send(.pairingRandom(nb))
            if model == .numericComparison {
                let v = try crypto { () throws(CryptoError) in try SMPToolbox.g2(u: pka, v: pkb, x: na, y: nb) } % 1_000_000
                guard await agent.confirmNumericComparison(v, peer: peer) else {
                    throw .localFailed(.numericComparisonFailed, detail: "the numbers were not confirmed here")
                }
            }
        case .passkeyEntry(_, let responderDisplays):
            let p = try await passkey(displayedHere: responderDisplays, agent)
            // Twenty rounds, one per bit of the passkey (2.3.5.6.3): Cai in, Cbi out, Nai in, Nbi out.
            for i in 0..<20 {
                let z = UInt8(0x80 | ((p >> i) & 1))
                let confirmPDU = try await next()
                guard case .pairingConfirm(let cai) = confirmPDU else { throw unexpected(confirmPDU, expecting: "Pairing Confirm") }
                let nbi = UInt128.random(in: .min ... .max)
                send(.pairingConfirm(try crypto { () throws(CryptoError) in try SMPToolbox.f4(u: pkb, v: pka, x: nbi, z: z) }))
                let nai = try await nextRandom()
                guard try crypto({ () throws(CryptoError) in try SMPToolbox.f4(u: pka, v: pkb, x: nai, z: z) }) == cai else {
                    throw .localFailed(.confirmValueFailed, detail: "the central's confirm value for passkey bit \(i) does not match (wrong passkey?)")
                }
                send(.pairingRandom(nbi))
                na = nai
                nb = nbi
            }
            ra = UInt128(p)
            rb = UInt128(p)
        case .outOfBand:
            if let oob = options.peerOOBData {
                ra = oob.random
                guard try crypto({ () throws(CryptoError) in try SMPToolbox.f4(u: pka, v: pka, x: ra, z: 0) }) == oob.confirm else {
                    throw .localFailed(.confirmValueFailed, detail: "the central's OOB confirm value does not match its public key")
                }
            }
            if preq.oobDataFlag == 1 {
                guard let local = localOOB else { throw .localFailed(.oobNotAvailable, detail: "the central has OOB data from this side, but none was made (localOOBData())") }
                rb = local.random
            }
            na = try await nextRandom()
            nb = UInt128.random(in: .min ... .max)
            send(.pairingRandom(nb))
        }

        // Authentication stage 2 and the LTK (2.3.5.6.5): Ea checked, Eb to send.
        let a = peer, b = local
        let (macKey, ltk) = try crypto { () throws(CryptoError) in try SMPToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b) }
        let ioCapA = [preq.authReq.rawValue, preq.oobDataFlag, preq.ioCapability.rawValue]
        let ioCapB = [pres.authReq.rawValue, pres.oobDataFlag, pres.ioCapability.rawValue]
        let checkPDU = try await next()
        guard case .pairingDHKeyCheck(let ea) = checkPDU else { throw unexpected(checkPDU, expecting: "Pairing DHKey Check") }
        guard try crypto({ () throws(CryptoError) in try SMPToolbox.f6(w: macKey, n1: na, n2: nb, r: rb, ioCap: ioCapA, a1: a, a2: b) }) == ea else {
            throw .localFailed(.dhKeyCheckFailed, detail: "the central's DHKey check value Ea does not match")
        }
        let eb = try crypto { () throws(CryptoError) in try SMPToolbox.f6(w: macKey, n1: nb, n2: na, r: ra, ioCap: ioCapB, a1: b, a2: a) }
        let key = LongTermKey(key: Self.masked(ltk, to: keySize), ediv: 0, rand: 0, keySize: keySize,
                              authenticated: model.isAuthenticated, secureConnections: true)
        return (key, .pairingDHKeyCheck(eb))
    }

    /// Sends a Security Request asking the central to pair or encrypt (3.5.7). Only a
    /// peripheral sends one, and not while pairing runs (2.4.6): then it does nothing.
    ///
    ///     try await manager.sendSecurityRequest([.bonding, .mitm, .secureConnections])
    public func sendSecurityRequest(_ authReq: AuthenticationRequirements) throws(PairingError) {
        guard role == .peripheral else {
            throw PairingError(peer: peer, .localFailed(.commandNotSupported, detail: "only the peripheral of a link sends a Security Request; this side is the central (pair instead)"))
        }
        if timedOut { throw PairingError(peer: peer, .channelDead) }
        if let closedError { throw PairingError(peer: peer, .channelClosed(closedError)) }
        guard !running else { return }
        send(.securityRequest(authReq))
    }

    /// Answers the central's Pairing Requests from now on as `responder` says (nil refuses
    /// them with Pairing Not Supported).
    func setResponder(_ responder: PairingResponder?) {
        self.responder = responder
    }

    /// Answers Pairing Requests on this manager's channel (package use: the fuzz target;
    /// apps call `Connection.acceptPairing`).
    package func acceptPairingRequests(options: PairingOptions, agent: any PairingAgent,
                                       onResult: @escaping @Sendable (Result<Bond, PairingError>) -> Void) {
        responder = PairingResponder(options: options, agent: agent, store: nil, onResult: onResult)
    }

    /// A pairing procedure runs (package use: the fuzz target).
    package var isPairing: Bool { running }
}
