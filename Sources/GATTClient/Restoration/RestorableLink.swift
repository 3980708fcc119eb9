import BLEWire
import BLECore

/// What a `Restoration` keeps of one link, enough to bring it back after a restart: the peer,
/// how it reconnects, the security it needs and its subscriptions.
///
///     for link in try await store.load() { print(link.peer, link.security, link.subscriptions.count) }
public struct RestorableLink: Sendable, Hashable {
    /// The peer's address and address type, as connected to.
    public var peer: LEAddress
    /// What follows a drop; for a restored link, whether the device is brought back again
    /// (`Restoration.restore()`).
    public var reconnect: RestorableReconnect
    /// The level the link is raised to before anything else (`.none`: left as it comes).
    public var security: SecurityLevel
    /// At most `RestorationFile.maximumSubscriptions`, one per characteristic.
    public var subscriptions: [RestorableSubscription]

    public init(peer: LEAddress, reconnect: RestorableReconnect = .never, security: SecurityLevel = .none,
                subscriptions: [RestorableSubscription] = []) {
        self.peer = peer
        self.reconnect = reconnect
        self.security = security
        self.subscriptions = subscriptions
    }
}

/// A `ReconnectPolicy` that can be written to a file: a `.custom` policy is a closure and
/// cannot.
///
///     let stored = try #require(RestorableReconnect(.always(maxAttempts: 5)))
public enum RestorableReconnect: Sendable, Hashable {
    case never
    case always(maxAttempts: Int?, backoff: ReconnectPolicy.Backoff)

    /// nil for `.custom`.
    public init?(_ policy: ReconnectPolicy) {
        switch policy {
        case .never: self = .never
        case .always(let maxAttempts, let backoff): self = .always(maxAttempts: maxAttempts, backoff: backoff)
        case .custom: return nil
        }
    }

    /// The policy to connect with.
    public var policy: ReconnectPolicy {
        switch self {
        case .never: return .never
        case .always(let maxAttempts, let backoff): return .always(maxAttempts: maxAttempts, backoff: backoff)
        }
    }
}

/// One subscription of a `RestorableLink`: the characteristic by UUIDs, and the handles it had
/// with the Database Hash (0x2B2A) they belong to, so that a restore can tell whether they
/// still hold.
public struct RestorableSubscription: Sendable, Hashable {
    public var characteristic: CharacteristicIdentifier
    /// Indications rather than notifications.
    public var indications: Bool
    /// The characteristic value handle when subscribed.
    public var valueHandle: UInt16
    /// The Client Characteristic Configuration descriptor's handle when subscribed.
    public var cccdHandle: UInt16
    /// The peer's Database Hash when subscribed (nil: the peer has none); the handles hold
    /// while it is unchanged.
    public var databaseHash: [UInt8]?
    /// The CCCD was written on an encrypted link: a bonded server keeps it for the next
    /// connection (Core Spec Vol 3, Part G, 3.3.3.3).
    public var writtenEncrypted: Bool

    public init(characteristic: CharacteristicIdentifier, indications: Bool = false, valueHandle: UInt16, cccdHandle: UInt16,
                databaseHash: [UInt8]?, writtenEncrypted: Bool) {
        self.characteristic = characteristic
        self.indications = indications
        self.valueHandle = valueHandle
        self.cccdHandle = cccdHandle
        self.databaseHash = databaseHash
        self.writtenEncrypted = writtenEncrypted
    }
}
