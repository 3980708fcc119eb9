import BLECore
import BLEWire

/// LE legacy pairing phase 2 as the initiator (Vol 3, Part H, 2.3.5.5): TK, confirm and random
/// exchange with c1, and the STK from s1.
extension SecurityManager {
    func legacy(_ preq: PairingParameters, _ pres: PairingParameters, _ model: AssociationModel, _ keySize: UInt8,
                _ options: PairingOptions, _ agent: any PairingAgent) async throws(PairingError.Kind) -> LongTermKey {
        // TK (2.3.5): zero for Just Works, the passkey, or the OOB key.
        var tk: UInt128 = 0
        switch model {
        case .passkeyEntry(let initiatorDisplays, _):
            tk = UInt128(try await passkey(displayedHere: initiatorDisplays, agent))
        case .outOfBand:
            guard let oob = options.legacyOOBTemporaryKey else {
                throw .localFailed(.oobNotAvailable, detail: "LE legacy OOB pairing needs the TK shared with the peer (PairingOptions.legacyOOBTemporaryKey)")
            }
            tk = oob
        case .justWorks, .numericComparison:
            break
        }
        let ia = local.address, ra = peer.address
        let preqBytes = SMPPDU.pairingRequest(preq).bytes, presBytes = SMPPDU.pairingResponse(pres).bytes
        let iat: UInt8 = local.type.isRandom ? 1 : 0, rat: UInt8 = peer.type.isRandom ? 1 : 0
        let confirm = { (r: UInt128) throws(CryptoError) -> UInt128 in
            try SMPToolbox.c1(k: tk, r: r, preq: preqBytes, pres: presBytes, iat: iat, ia: ia, rat: rat, ra: ra)
        }
        let mrand = UInt128.random(in: .min ... .max)
        send(.pairingConfirm(try crypto { () throws(CryptoError) in try confirm(mrand) }))
        let confirmPDU = try await next()
        guard case .pairingConfirm(let sconfirm) = confirmPDU else { throw unexpected(confirmPDU, expecting: "Pairing Confirm") }
        send(.pairingRandom(mrand))
        let srand = try await nextRandom()
        guard try crypto({ () throws(CryptoError) in try confirm(srand) }) == sconfirm else {
            throw .localFailed(.confirmValueFailed, detail: "the peer's confirm value Sconfirm does not match its Srand\(model == .outOfBand ? " (wrong OOB key?)" : tk != 0 ? " (wrong passkey?)" : "")")
        }
        let stk = try crypto { () throws(CryptoError) in try SMPToolbox.s1(k: tk, r1: srand, r2: mrand) }
        return LongTermKey(key: Self.masked(stk, to: keySize), ediv: 0, rand: 0, keySize: keySize,
                           authenticated: model.isAuthenticated, secureConnections: false)
    }
}
