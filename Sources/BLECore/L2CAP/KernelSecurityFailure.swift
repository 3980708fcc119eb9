import BLEWire

/// How the kernel's pairing or encryption of a link failed, as the adapter's HCI traffic shows
/// it (the kernel's management interface only says Authentication Failed, status 0x05, for
/// every SMP failure).
public enum KernelSecurityFailure: Sendable, Hashable, CustomStringConvertible {
    /// A Pairing Failed PDU (SMP, Vol 3, Part H, 3.5.5) ended the pairing; `byPeer` when the
    /// peer sent it, else the kernel did.
    case pairingFailed(PairingFailedReason, byPeer: Bool)
    /// Encryption with the kernel's stored key failed: Encryption Change with this status
    /// (Vol 4, Part E, 7.7.8). PIN or Key Missing (0x06): the peer no longer has the bond.
    case encryptionFailed(HCIStatus)

    /// "Pairing Failed, Confirm Value Failed (0x04), from the peer"; the advice is in
    /// `L2CAPSocketError.securityFailed`'s text.
    public var description: String {
        switch self {
        case .pairingFailed(let reason, let byPeer): return "Pairing Failed, \(reason), from \(byPeer ? "the peer" : "the kernel")"
        case .encryptionFailed(let status): return "Encryption Change, \(status)"
        }
    }
}
