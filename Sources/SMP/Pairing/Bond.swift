import BLECore
import BLEWire

/// A Long Term Key with what identifies and qualifies it (Vol 3, Part H, 2.4.2).
public struct LongTermKey: Sendable, Hashable {
    public var key: UInt128
    /// EDIV and Rand (zero for LE Secure Connections keys).
    public var ediv: UInt16
    public var rand: UInt64
    /// Encryption key size in octets (7...16).
    public var keySize: UInt8
    /// Made with an association model that protects against MITM.
    public var authenticated: Bool
    /// Made with LE Secure Connections.
    public var secureConnections: Bool

    public init(key: UInt128, ediv: UInt16, rand: UInt64, keySize: UInt8, authenticated: Bool, secureConnections: Bool) {
        self.key = key
        self.ediv = ediv
        self.rand = rand
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
    }

    /// What a link encrypted with this key is worth.
    public var level: SecurityLevel {
        if authenticated && secureConnections && keySize == 16 { return .secureConnections }
        return authenticated ? .authenticated : .encrypted
    }
}

/// The keys of one paired peer (Vol 3, Part H, 3.6): what a bond store keeps.
///
///     let bond = try await link.pair()
///     print(bond.longTermKey?.level ?? .none)
public struct Bond: Sendable, Hashable {
    /// The address the peer had when paired.
    public var peer: LEAddress
    /// The identity address the peer distributed (Identity Address Information), if any.
    public var identityAddress: LEAddress?
    /// The key that encrypts links with the peer (this side as central).
    public var longTermKey: LongTermKey?
    /// The key this side distributed (used when the peer is the central), legacy pairing only.
    public var localLongTermKey: LongTermKey?
    /// The peer's Identity Resolving Key.
    public var identityResolvingKey: UInt128?
    /// The peer's Connection Signature Resolving Key.
    public var signatureKey: UInt128?
    /// The CSRK this side distributed (`PairingOptions.initiatorKeys` with `.signingKey`):
    /// it signs this side's Signed Write Commands to the peer (Vol 3, Part H, 2.4.5).
    public var localSignatureKey: UInt128?
    /// The SignCounter of this side's next signed write with `localSignatureKey`: it starts at
    /// 0 and grows by one for every signed message (2.4.5), across runs.
    public var localSignCounter: UInt32 = 0
    /// The highest SignCounter accepted in a Signed Write Command signed with `signatureKey`;
    /// a later one must be above it (Vol 3, Part H, 2.4.5). nil before the first.
    public var peerSignCounter: UInt32?
    /// The Client Characteristic Configuration values this side's GATT server keeps for the
    /// peer as a client, by descriptor handle (Vol 3, Part G, 3.3.3.3: kept across links for a
    /// bonded client); only those not zero. At most `clientConfigurationLimit`.
    public var clientConfigurations: [UInt16: UInt16] = [:]
    /// The most CCCD values a bond keeps (a database has at most one per characteristic).
    public static let clientConfigurationLimit = 512
    /// The Client Supported Features (Vol 3, Part G, 7.2, octet 0) the peer as a client wrote
    /// to this side's GATT server: kept across links for a bonded client.
    public var clientSupportedFeatures: UInt8 = 0
    /// The Database Hash (Vol 3, Part G, 7.3.1, the AES-CMAC as a number) of this side's
    /// database as the peer as a client was last change-aware of it (2.5.2.1: a bonded
    /// client's awareness persists across links): a different hash, or 0, makes it
    /// change-unaware on its next link. nil: not kept (a bond from before; change-aware).
    public var clientDatabaseHash: UInt128?
    /// Seconds since 1970 when the bond was made.
    public var created: Int64

    public init(peer: LEAddress, identityAddress: LEAddress? = nil, longTermKey: LongTermKey? = nil, localLongTermKey: LongTermKey? = nil,
                identityResolvingKey: UInt128? = nil, signatureKey: UInt128? = nil, created: Int64 = 0) {
        self.peer = peer
        self.identityAddress = identityAddress
        self.longTermKey = longTermKey
        self.localLongTermKey = localLongTermKey
        self.identityResolvingKey = identityResolvingKey
        self.signatureKey = signatureKey
        self.created = created
    }

    /// The address that names the peer for good: its identity address, else the one it had.
    public var address: LEAddress { identityAddress ?? peer }
}
