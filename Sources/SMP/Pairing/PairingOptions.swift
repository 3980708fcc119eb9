import BLECore
import BLEWire

/// What this side asks for and accepts when pairing (Vol 3, Part H, 2.3).
///
///     var options = PairingOptions()
///     options.ioCapability = .keyboardDisplay
///     options.mitm = true
public struct PairingOptions: Sendable {
    /// How a person can take part here (with the agent). Default: none (Just Works).
    public var ioCapability: IOCapability = .noInputNoOutput
    /// Keep the keys (Bonding_Flags = Bonding).
    public var bonding = true
    /// Ask for MITM protection; a pairing that can only be Just Works then fails with
    /// Authentication Requirements.
    public var mitm = false
    /// Offer LE Secure Connections (and use it when the peer offers it too).
    public var secureConnections = true
    /// Refuse LE legacy pairing (Secure Connections Only mode, Vol 3, Part C, 10.2.4).
    public var secureConnectionsOnly = false
    /// Offered maximum encryption key size, 7...16 octets.
    public var maximumKeySize: UInt8 = 16
    /// The smallest key size accepted from the negotiation (7...16).
    public var minimumKeySize: UInt8 = 16
    /// Keys this side distributes (default none: a central with a public address needs none).
    public var initiatorKeys: KeyDistribution = []
    /// This side's IRK and identity address, sent with `.identityKey` in `initiatorKeys` (as
    /// central) or `responderKeys` (as peripheral, `acceptPairing`); without it a random IRK
    /// and the link's own address go (which resolve nothing).
    public var localIdentity: LocalIdentity?
    /// Keys asked from the peer.
    public var responderKeys: KeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    /// The peer's out-of-band data, when the app got it another way (NFC, a QR code).
    public var peerOOBData: OOBData?
    /// The 128-bit TK of LE legacy Out of Band pairing (Vol 3, Part H, 2.3.5.4), shared with
    /// the peer another way. It sets the OOB data flag only with `secureConnections` off
    /// (legacy pairing is the only one that uses a TK); Secure Connections OOB takes
    /// `peerOOBData` instead.
    public var legacyOOBTemporaryKey: UInt128?
    /// Ask for keypress notifications during Passkey Entry (AuthReq Keypress, 3.5.1); they
    /// flow when the peer asks too (`KeypressReporter`, `PairingAgent.peerKeypress`).
    public var keypressNotifications = false
    /// The SMP timeout (Vol 3, Part H, 3.4): 30 s.
    public var timeout: Duration = .seconds(30)

    public init() {}
}

/// Out-of-band data for LE Secure Connections (Vol 3, Part H, 2.3.5.6.4): the random value r
/// and the confirm value C = f4(PKx, PKx, r, 0) of the device that made it.
public struct OOBData: Sendable, Hashable {
    public var random: UInt128
    public var confirm: UInt128
    public init(random: UInt128, confirm: UInt128) {
        self.random = random
        self.confirm = confirm
    }
}

/// The association model chosen from both sides' IO capabilities, OOB flags and MITM flags
/// (Vol 3, Part H, 2.3.5.1, Tables 2.6 to 2.8).
public enum AssociationModel: Sendable, Hashable, CustomStringConvertible {
    case justWorks
    case numericComparison
    /// Passkey Entry: who displays and who types the six digits.
    case passkeyEntry(initiatorDisplays: Bool, responderDisplays: Bool)
    case outOfBand

    /// Keys made with it are MITM-protected.
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: return "Just Works"
        case .numericComparison: return "Numeric Comparison"
        case .passkeyEntry: return "Passkey Entry"
        case .outOfBand: return "Out of Band"
        }
    }

    /// Tables 2.6-2.8 from the initiator's and responder's pairing parameters.
    public static func select(initiator i: PairingParameters, responder r: PairingParameters, secureConnections sc: Bool) -> AssociationModel {
        if sc ? (i.oobDataFlag == 1 || r.oobDataFlag == 1) : (i.oobDataFlag == 1 && r.oobDataFlag == 1) { return .outOfBand }
        if !i.authReq.contains(.mitm) && !r.authReq.contains(.mitm) { return .justWorks }
        let a = i.ioCapability, b = r.ioCapability
        if a == .noInputNoOutput || b == .noInputNoOutput || a.isReserved || b.isReserved { return .justWorks }
        let initiatorTypes = a == .keyboardOnly, responderTypes = b == .keyboardOnly
        let initiatorCanType = a == .keyboardOnly || a == .keyboardDisplay
        let responderCanType = b == .keyboardOnly || b == .keyboardDisplay
        let yesNo: (IOCapability) -> Bool = { $0 == .displayYesNo || $0 == .keyboardDisplay }
        if sc && yesNo(a) && yesNo(b) { return .numericComparison }
        if !initiatorCanType && !responderCanType { return .justWorks }
        if initiatorTypes && responderTypes { return .passkeyEntry(initiatorDisplays: false, responderDisplays: false) }
        // One side types, the other displays; a keyboard-only side always types, and when
        // both could type the responder types (Table 2.8).
        if initiatorTypes || (initiatorCanType && !responderCanType) { return .passkeyEntry(initiatorDisplays: false, responderDisplays: true) }
        return .passkeyEntry(initiatorDisplays: true, responderDisplays: false)
    }
}
