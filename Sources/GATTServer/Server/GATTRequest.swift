import GATTClient
import BLEWire
import ATT

/// The security of the link a request came on (Vol 3, Part C, 10.2), as the server enforces it.
public struct GATTLinkSecurity: Sendable, Hashable {
    public var isEncrypted: Bool
    public var isAuthenticated: Bool
    /// The encryption key size in octets (7...16) while encrypted, else 0.
    public var encryptionKeySize: Int
    public init(isEncrypted: Bool = false, isAuthenticated: Bool = false, encryptionKeySize: Int = 0) {
        self.isEncrypted = isEncrypted; self.isAuthenticated = isAuthenticated; self.encryptionKeySize = encryptionKeySize
    }
}

/// One read or write of a characteristic value served by a handler: who asks, for what.
///
///     Characteristic(uuid: level, properties: [.read], onRead: { request in .value([battery.level(for: request.peer)]) })
public struct GATTRequest: Sendable {
    /// The peer's address, or the link's description when it has none.
    public let peer: String
    /// The peer's identity when the link is bonded (CCCDs and signed writes are kept for it).
    public let bondedPeer: LEAddress?
    public let handle: UInt16
    public let uuid: BluetoothUUID
    /// Where a Read Blob or a queued write starts (0 otherwise).
    public let offset: Int
    public let security: GATTLinkSecurity
}

/// What a read handler answers: the whole value (the server cuts it to the request's offset
/// and the ATT_MTU), or the ATT error that refuses the read.
public enum GATTReadResult: Sendable, Hashable {
    case value([UInt8])
    case refused(ATTErrorCode)
}

/// Serves a characteristic value for one read.
public typealias GATTReadHandler = @Sendable (GATTRequest) async -> GATTReadResult
/// Decides a write of a characteristic value (the whole value, after a queued write is
/// assembled): nil accepts it and the server stores it, an ATT error code refuses it.
public typealias GATTWriteHandler = @Sendable (GATTRequest, [UInt8]) async -> ATTErrorCode?
