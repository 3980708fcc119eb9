#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLEWire

/// Phase 3, Transport Specific Key Distribution (Vol 3, Part H, 3.6.1): the responder's keys
/// arrive first, in the order of Figure 3.11, then this side sends its own.
extension SecurityManager {
    func receiveKeys(_ keys: KeyDistribution, sc: Bool, keySize: UInt8, model: AssociationModel) async throws(PairingError.Kind) -> Bond {
        var bond = Bond(peer: peer, created: Int64(Self.secondsSince1970()))
        // With Secure Connections the LTK comes from f5, never from the responder (3.6.1).
        if keys.contains(.encryptionKey) && !sc {
            let info = try await next()
            guard case .encryptionInformation(let ltk) = info else { throw unexpected(info, expecting: "Encryption Information") }
            let ident = try await next()
            guard case .centralIdentification(let ediv, let rand) = ident else { throw unexpected(ident, expecting: "Central Identification") }
            bond.longTermKey = LongTermKey(key: Self.masked(ltk, to: keySize), ediv: ediv, rand: rand, keySize: keySize,
                                           authenticated: model.isAuthenticated, secureConnections: false)
        }
        if keys.contains(.identityKey) {
            let info = try await next()
            guard case .identityInformation(let irk) = info else { throw unexpected(info, expecting: "Identity Information") }
            let address = try await next()
            guard case .identityAddressInformation(let type, let addr) = address else { throw unexpected(address, expecting: "Identity Address Information") }
            guard type <= 1 else { throw .localFailed(.invalidParameters, detail: "the peer's identity address type 0x\(String(type, radix: 16)) is reserved") }
            bond.identityResolvingKey = irk
            bond.identityAddress = LEAddress(addr, type: type == 0 ? .public : .random)
        }
        if keys.contains(.signingKey) {
            let info = try await next()
            guard case .signingInformation(let csrk) = info else { throw unexpected(info, expecting: "Signing Information") }
            bond.signatureKey = csrk
        }
        return bond
    }

    /// Sends this side's keys; returns the LTK it gave (legacy pairing with EncKey) and the
    /// CSRK it gave (SignKey).
    func sendKeys(_ keys: KeyDistribution, sc: Bool, keySize: UInt8, model: AssociationModel, identity: LocalIdentity? = nil) -> (ltk: LongTermKey?, csrk: UInt128?) {
        var given: LongTermKey?
        var csrk: UInt128?
        if keys.contains(.encryptionKey) && !sc {
            let ltk = LongTermKey(key: Self.masked(UInt128.random(in: .min ... .max), to: keySize), ediv: UInt16.random(in: .min ... .max),
                                  rand: UInt64.random(in: .min ... .max), keySize: keySize, authenticated: model.isAuthenticated, secureConnections: false)
            send(.encryptionInformation(longTermKey: ltk.key))
            send(.centralIdentification(ediv: ltk.ediv, rand: ltk.rand))
            given = ltk
        }
        if keys.contains(.identityKey) {
            let id = identity ?? LocalIdentity(irk: UInt128.random(in: .min ... .max), address: local)
            send(.identityInformation(identityResolvingKey: id.irk))
            send(.identityAddressInformation(addressType: id.address.type.isRandom ? 1 : 0, address: id.address.address))
        }
        if keys.contains(.signingKey) {
            let key = UInt128.random(in: .min ... .max)
            send(.signingInformation(signatureKey: key))
            csrk = key
        }
        return (given, csrk)
    }

    static func secondsSince1970() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec
    }
}
