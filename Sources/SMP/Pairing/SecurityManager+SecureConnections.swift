import BLECore
import BLEWire

/// LE Secure Connections pairing phase 2 as the initiator (Vol 3, Part H, 2.3.5.6).
extension SecurityManager {
    func secureConnections(_ preq: PairingParameters, _ pres: PairingParameters, _ model: AssociationModel, _ keySize: UInt8,
                           _ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> LongTermKey {
        // Public key exchange (2.3.5.6.1).
        let own = try crypto { () throws(CryptoError) in try ownKeyPair() }
        send(.pairingPublicKey(own.publicKey))
        let keyPDU = try await next()
        guard case .pairingPublicKey(let peerKey) = keyPDU else { throw unexpected(keyPDU, expecting: "Pairing Public Key") }
        guard peerKey.x != own.publicKey.x else {
            throw .localFailed(.invalidParameters, detail: "the peer sent back this side's own public key")
        }
        let dhKey: [UInt8]
        do throws(CryptoError) {
            dhKey = try own.sharedSecret(with: peerKey)
        } catch {
            if error == .invalidPublicKey { throw .localFailed(.dhKeyCheckFailed, detail: "\(error)") }
            throw .crypto(error)
        }
        let pka = own.publicKey.x, pkb = peerKey.x

        // Authentication stage 1 (2.3.5.6.2 to 2.3.5.6.4).
        var na: UInt128 = 0, nb: UInt128 = 0, ra: UInt128 = 0, rb: UInt128 = 0
        switch model {
        case .justWorks, .numericComparison:
            let confirmPDU = try await next()
            guard case .pairingConfirm(let cb) = confirmPDU else { throw unexpected(confirmPDU, expecting: "Pairing Confirm") }
            na = UInt128.random(in: .min ... .max)
            send(.pairingRandom(na))
            nb = try await nextRandom()
            guard try crypto({ () throws(CryptoError) in try SMPToolbox.f4(u: pkb, v: pka, x: nb, z: 0) }) == cb else {
                throw .localFailed(.confirmValueFailed, detail: "the peer's confirm value Cb does not match its nonce Nb")
            }
            if model == .numericComparison {
                let v = try crypto { () throws(CryptoError) in try SMPToolbox.g2(u: pka, v: pkb, x: na, y: nb) } % 1_000_000
                guard await agent.confirmNumericComparison(v, peer: peer) else {
                    throw .localFailed(.numericComparisonFailed, detail: "the numbers were not confirmed here")
                }
            }
        case .passkeyEntry(let initiatorDisplays, _):
            let p = try await passkey(displayedHere: initiatorDisplays, agent)
            // Twenty rounds, one per bit of the passkey (2.3.5.6.3).
            for i in 0..<20 {
                let z = UInt8(0x80 | ((p >> i) & 1))
                let nai = UInt128.random(in: .min ... .max)
                send(.pairingConfirm(try crypto { () throws(CryptoError) in try SMPToolbox.f4(u: pka, v: pkb, x: nai, z: z) }))
                let confirmPDU = try await next()
                guard case .pairingConfirm(let cbi) = confirmPDU else { throw unexpected(confirmPDU, expecting: "Pairing Confirm") }
                send(.pairingRandom(nai))
                let nbi = try await nextRandom()
                guard try crypto({ () throws(CryptoError) in try SMPToolbox.f4(u: pkb, v: pka, x: nbi, z: z) }) == cbi else {
                    throw .localFailed(.confirmValueFailed, detail: "the peer's confirm value for passkey bit \(i) does not match (wrong passkey?)")
                }
                na = nai
                nb = nbi
            }
            ra = UInt128(p)
            rb = UInt128(p)
        case .outOfBand:
            if let oob = options.peerOOBData {
                rb = oob.random
                guard try crypto({ () throws(CryptoError) in try SMPToolbox.f4(u: pkb, v: pkb, x: rb, z: 0) }) == oob.confirm else {
                    throw .localFailed(.confirmValueFailed, detail: "the peer's OOB confirm value does not match its public key")
                }
            }
            if pres.oobDataFlag == 1 {
                guard let local = localOOB else { throw .localFailed(.oobNotAvailable, detail: "the peer has OOB data from this side, but none was made (localOOBData())") }
                ra = local.random
            }
            na = UInt128.random(in: .min ... .max)
            send(.pairingRandom(na))
            nb = try await nextRandom()
        }

        // Authentication stage 2 and the LTK (2.3.5.6.5).
        let a = local, b = peer
        let (macKey, ltk) = try crypto { () throws(CryptoError) in try SMPToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b) }
        let ioCapA = [preq.authReq.rawValue, preq.oobDataFlag, preq.ioCapability.rawValue]
        let ioCapB = [pres.authReq.rawValue, pres.oobDataFlag, pres.ioCapability.rawValue]
        let ea = try crypto { () throws(CryptoError) in try SMPToolbox.f6(w: macKey, n1: na, n2: nb, r: rb, ioCap: ioCapA, a1: a, a2: b) }
        send(.pairingDHKeyCheck(ea))
        let checkPDU = try await next()
        guard case .pairingDHKeyCheck(let eb) = checkPDU else { throw unexpected(checkPDU, expecting: "Pairing DHKey Check") }
        guard try crypto({ () throws(CryptoError) in try SMPToolbox.f6(w: macKey, n1: nb, n2: na, r: ra, ioCap: ioCapB, a1: b, a2: a) }) == eb else {
            throw .localFailed(.dhKeyCheckFailed, detail: "the peer's DHKey check value Eb does not match")
        }
        return LongTermKey(key: Self.masked(ltk, to: keySize), ediv: 0, rand: 0, keySize: keySize,
                           authenticated: model.isAuthenticated, secureConnections: true)
    }

    func nextRandom() async throws(PairingError.Kind) -> UInt128 {
        let pdu = try await next()
        guard case .pairingRandom(let n) = pdu else { throw unexpected(pdu, expecting: "Pairing Random") }
        return n
    }
}
