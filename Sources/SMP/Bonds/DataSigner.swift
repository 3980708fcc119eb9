import BLECore
import BLEWire

/// Signs this side's Signed Write Commands to one bonded peer (Vol 3, Part H, 2.4.5; Vol 3,
/// Part F, 3.4.5.4) with the CSRK this side distributed, and keeps the SignCounter in the
/// bond: every signature takes the bond's next counter and saves the bond with it raised
/// before the signature is used, so no counter is ever used twice. Signatures are made one at
/// a time (an actor), in the order asked.
///
///     await peripheral.setWriteSigner(store.dataSigner(for: link.peer).writeSigner)
public actor DataSigner {
    public nonisolated let peer: LEAddress
    let store: any BondStore

    public init(store: any BondStore, peer: LEAddress) {
        self.store = store
        self.peer = peer
    }

    /// `sign` as the closure `Peripheral.setWriteSigner` takes.
    public nonisolated var writeSigner: @Sendable ([UInt8]) async throws -> (signCounter: UInt32, mac: UInt64) {
        { message in try await self.sign(message) }
    }

    /// The SignCounter and MAC for `message` (the Signed Write Command's opcode, handle and
    /// value as sent).
    public func sign(_ message: [UInt8]) throws(SigningError) -> (signCounter: UInt32, mac: UInt64) {
        guard var bond = store.bond(resolving: peer), let csrk = bond.localSignatureKey else { throw .noSignatureKey(peer: peer) }
        let counter = bond.localSignCounter
        guard counter < .max else { throw .counterExhausted(peer: peer) }
        bond.localSignCounter = counter + 1
        do throws(BondStoreError) { try store.save(bond) } catch { throw .store(peer: peer, error) }
        do throws(CryptoError) {
            return (counter, try SMPToolbox.signature(csrk: csrk, message: message, signCounter: counter))
        } catch {
            throw .crypto(peer: peer, error)
        }
    }
}

extension BondStore {
    /// The signer of this side's Signed Write Commands to `peer` (a bond with a local CSRK).
    ///
    ///     await peripheral.setWriteSigner(store.dataSigner(for: link.peer).writeSigner)
    public func dataSigner(for peer: LEAddress) -> DataSigner { DataSigner(store: self, peer: peer) }
}

/// Why a write could not be signed.
public enum SigningError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No bond with the peer holds a CSRK this side distributed.
    case noSignatureKey(peer: LEAddress)
    /// The 32-bit SignCounter has no value left for the key.
    case counterExhausted(peer: LEAddress)
    /// The bond with the raised counter could not be saved.
    case store(peer: LEAddress, BondStoreError)
    case crypto(peer: LEAddress, CryptoError)

    public var description: String {
        switch self {
        case .noSignatureKey(let p):
            return "no CSRK of this side for \(p): pair with PairingOptions.initiatorKeys containing .signingKey to sign writes (Vol 3, Part H, 2.4.5)"
        case .counterExhausted(let p):
            return "the SignCounter of the CSRK for \(p) is exhausted: pair again for a new key"
        case .store(let p, let e):
            return "the SignCounter for \(p) could not be saved, so the write was not signed: \(e)"
        case .crypto(let p, let e):
            return "signing a write to \(p) failed: \(e)"
        }
    }
}
