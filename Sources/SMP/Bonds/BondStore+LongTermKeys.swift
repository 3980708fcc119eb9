import BLECore
import BLEWire

/// LE Long Term Key Requests answered from the bonds. When the peer is the central and
/// starts encryption, the controller asks for the key of the link (Vol 4, Part E, 7.7.65.5:
/// handle, Rand, EDIV); the key is the peer's bond's, chosen as Vol 3, Part H, 2.4.4 and
/// Vol 6, Part B, 5.1.3 say:
/// - EDIV 0 and Rand 0: the LE Secure Connections key (`longTermKey` made with Secure
///   Connections; both sides use the same one);
/// - otherwise the legacy key this side distributed (`localLongTermKey`) with that EDIV
///   and Rand.
/// Anything else gets no key, and the Central answers with the Negative Reply.
extension BondStore {
    /// The key for an LE Long Term Key Request from `peer` (found as `bond(resolving:)`
    /// finds it), or nil.
    ///
    ///     let key = store.longTermKey(for: peer, ediv: 0, rand: 0)
    public func longTermKey(for peer: LEAddress, ediv: UInt16, rand: UInt64) -> UInt128? {
        storedLongTermKey(for: peer, ediv: ediv, rand: rand)?.key
    }

    /// The stored key for that request, with its level and size.
    func storedLongTermKey(for peer: LEAddress, ediv: UInt16, rand: UInt64) -> LongTermKey? {
        guard let bond = bond(resolving: peer) else { return nil }
        if ediv == 0, rand == 0, let key = bond.longTermKey, key.secureConnections { return key }
        if let key = bond.localLongTermKey, !key.secureConnections, key.ediv == ediv, key.rand == rand { return key }
        return nil
    }

    /// Answers the controller's LE Long Term Key Requests from this store: LE Long Term Key
    /// Request Reply with the bond's key, the Negative Reply without one.
    ///
    ///     await central.setLongTermKeyProvider(store.longTermKeyProvider)
    public var longTermKeyProvider: LongTermKeyProvider {
        { [self] peer, ediv, rand in longTermKey(for: peer, ediv: ediv, rand: rand) }
    }
}
