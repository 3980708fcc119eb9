import BLECore

/// LE legacy pairing phase 2 as the initiator (Vol 3, Part H, 2.3.5.5): TK, confirm and random
/// exchange with c1, and the STK from s1.
extension SecurityManager {
    func legacy(_ preq: PairingParameters, _ pres: PairingParameters, _ model: AssociationModel, _ keySize: UInt8,
                _ agent: any PairingAgent) async throws(PairingError.Kind) -> LongTermKey {
        var passkeyValue: UInt128 = 0
        if case .passkeyEntry(let initiatorDisplays, _) = model {
            passkeyValue = UInt128(try await passkey(displayedHere: initiatorDisplays, agent))
        }
        let tk = passkeyValue
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
            throw .localFailed(.confirmValueFailed, detail: "the peer's confirm value Sconfirm does not match its Srand\(tk != 0 ? " (wrong passkey?)" : "")")
        }
        let stk = try crypto { () throws(CryptoError) in try SMPToolbox.s1(k: tk, r1: srand, r2: mrand) }
        return LongTermKey(key: Self.masked(stk, to: keySize), ediv: 0, rand: 0, keySize: keySize,
                           authenticated: model.isAuthenticated, secureConnections: false)
    }
}
