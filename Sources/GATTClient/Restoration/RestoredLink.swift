import BLEWire
import BLECore

/// A link a `Restoration` made or brought back: the connection, its GATT client, and the
/// streams of the stored subscriptions, subscribed before the link was handed over, so
/// iterating them resumes the app's notifications where they were.
///
///     case .restored(let link) = event
///     if let values = link.streams[measurement] { for try await value in values { ... } }
public struct RestoredLink: Sendable {
    public let peer: LEAddress
    public let connection: Connection
    public let peripheral: Peripheral
    /// The stored subscriptions' streams by characteristic (none for a link
    /// `Restoration.connect` just made; a subscription that failed is in `failures`).
    public let streams: [CharacteristicIdentifier: NotificationStream<[UInt8]>]
    /// Stored subscriptions that could not be brought back, with why (the characteristic is
    /// gone from a changed database, the CCCD write was refused, ...).
    public let failures: [CharacteristicIdentifier: GATTError]
}

/// What `Restoration.restore()` reports, in order, for each stored link that comes back.
///
///     if case .failed(let peer, let error) = event { print("\(peer.address): \(error)") }
public enum RestorationEvent: Sendable {
    /// The link is up, raised to its stored security, and its subscriptions are back.
    case restored(RestoredLink)
    /// The link came up but could not be set up again (security, the GATT client); it was
    /// ended, and comes back when the device is seen again if its policy allows.
    case failed(peer: LEAddress, RestorationError)
}

/// How a `Restoration` sets links up.
///
///     var options = RestorationOptions()
///     options.trustsBondedServerCCCDs = true   // a bonded server keeps CCCDs: no writes on restore
public struct RestorationOptions: Sendable {
    /// Takes the CCCDs of a bonded server as kept when a restored link is encrypted again and
    /// the peer's Database Hash is the stored one (Core Spec Vol 3, Part G, 3.3.3.3: a server
    /// keeps the CCCDs of bonded clients across connections), so nothing is written. Off by
    /// default: a server that does not keep them would then send nothing.
    public var trustsBondedServerCCCDs = false
    /// The connection parameters of links made and brought back.
    public var parameters: ConnectionRequestParameters = .default
    /// The buffering of the restored streams.
    public var bufferingPolicy: StreamBufferingPolicy = .notificationDefault

    public init() {}
}
