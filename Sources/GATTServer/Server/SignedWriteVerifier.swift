import GATTClient
import SMP
import BLEWire
import ATT

/// Checks the signature of a Signed Write Command (Vol 3, Part H, 2.4.5) from a bonded peer.
/// The server itself refuses a SignCounter that does not increase.
///
///     await server.setSignedWriteVerifier(BondStoreSignatureVerifier(store: bonds))
public protocol SignedWriteVerifier: Sendable {
    /// True when `signature.mac` is the MAC of `message` (opcode, handle and value as sent)
    /// and `signature.signCounter` with the peer's CSRK, and the counter is above the last one
    /// the verifier accepted from that peer.
    func verify(peer: LEAddress, message: [UInt8], signature: ATTSignature) async -> Bool
}

/// Verifies signed writes with the CSRK the peer distributed (`Bond.signatureKey`), and keeps
/// the last accepted SignCounter in the bond (`Bond.peerSignCounter`), so a replayed write
/// is refused after a restart as well.
public struct BondStoreSignatureVerifier: SignedWriteVerifier {
    public let store: any BondStore
    public init(store: any BondStore) { self.store = store }

    public func verify(peer: LEAddress, message: [UInt8], signature: ATTSignature) async -> Bool {
        guard let bond = store.bond(resolving: peer), let csrk = bond.signatureKey else { return false }
        if let last = bond.peerSignCounter, signature.signCounter <= last { return false }
        guard let mac = try? SMPToolbox.signature(csrk: csrk, message: message, signCounter: signature.signCounter),
              mac == signature.mac else { return false }
        // The counter is checked again and kept in one step with the store, so a write of the
        // same bond elsewhere (the server's CCCDs) neither undoes it nor lets a replay through.
        do throws(BondStoreError) {
            return try store.update(bond.peer) { stored in
                guard stored.signatureKey == csrk, (stored.peerSignCounter.map { signature.signCounter > $0 } ?? true) else { return false }
                stored.peerSignCounter = signature.signCounter
                return true
            }
        } catch { return false }
    }
}
