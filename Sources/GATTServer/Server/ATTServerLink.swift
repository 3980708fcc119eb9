import BLECore
import BLEWire

/// The server's end of one ATT bearer: the fixed channel 0x0004 of an LE link, the
/// in-process loopback of BLETestSupport, or a virtual controller's link. The owner calls
/// `GATTServer.connect`, `receive(_:on:)` and `disconnect` on the server's queue, and
/// the server answers through `sendToCentral` on that queue.
///
///     final class MyLink: ATTServerLink { func sendToCentral(_ pdu: [UInt8]) { channel.send(pdu) } ... }
public protocol ATTServerLink: AnyObject, Sendable {
    /// Sends one ATT PDU to the client (a response, notification or indication).
    func sendToCentral(_ pdu: [UInt8])
    /// The client's address, for logs and for `GATTRequest.peer`.
    var centralDescription: String { get }
}

/// Reports the security of a link, so a `GATTServer` can enforce encryption and
/// authentication permissions. Links that do not conform count as unencrypted.
public protocol ATTServerLinkSecurity: AnyObject {
    var isEncrypted: Bool { get }
    var isAuthenticated: Bool { get }
    /// The encryption key size in octets (7...16) while encrypted.
    var encryptionKeySize: Int { get }
}

extension ATTServerLinkSecurity {
    /// A full-size key unless the link says otherwise.
    public var encryptionKeySize: Int { 16 }
}

/// A link that can ask the client to raise its security: after a read or write refused with
/// Insufficient Authentication, Insufficient Encryption or Encryption Key Size Too Short the
/// server calls `securityRefused(needs:)` on the queue, so the peripheral can send an SMP
/// Security Request (Vol 3, Part H, 2.4.6; `Connection.sendSecurityRequest` in module SMP).
///
///     func securityRefused(needs level: SecurityLevel) { Task { try? await connection.sendSecurityRequest(level) } }
public protocol ATTServerLinkSecurityRequest: AnyObject {
    /// A request was refused because the link is below `level`.
    func securityRefused(needs level: SecurityLevel)
}

/// A link whose peer is bonded: the server keeps its CCCDs and Client Supported Features
/// across links, and verifies its signed writes with the bond's CSRK.
public protocol ATTServerLinkBond: AnyObject {
    /// The bonded peer's identity address; nil while the link is not bonded.
    var bondedPeer: LEAddress? { get }
    /// The identity address of the bond whose CSRK verifies the link's Signed Write Commands:
    /// the bond of the peer's address whether or not the link is encrypted, since the
    /// signature itself authenticates the data (Vol 3, Part C, 10.4.2). Default: `bondedPeer`.
    var signingPeer: LEAddress? { get }
}

extension ATTServerLinkBond {
    public var signingPeer: LEAddress? { bondedPeer }
}

/// A link the server can end: after an indication stays unconfirmed for the 30 s ATT
/// transaction timeout (Vol 3, Part F, 3.3.3) the bearer is closed.
public protocol ATTServerLinkClosing: AnyObject {
    /// Ends the bearer (disconnects the link when it is the LE fixed channel).
    func closeBearer()
}

/// A link whose send queue is bounded. The server hands it a notification only while
/// `canSend`; the others wait in the link's own queue in the server (at most
/// `GATTServer.notificationQueueLimit`, dropped and counted beyond) until `whenCanSend` calls
/// back. Indications are not held: one at a time waits for its confirmation.
///
///     var canSend: Bool { channel.queuedPDUs < 8 }
///     func whenCanSend(_ body: @escaping @Sendable () -> Void) { channel.onDrained(body) }
public protocol ATTServerLinkFlowControl: AnyObject {
    /// False while the link cannot take another PDU without exceeding its bound.
    var canSend: Bool { get }
    /// Calls `body` once, on any queue, when `canSend` may be true again or the link is gone.
    /// Called on the server's queue after `canSend` answered false.
    func whenCanSend(_ body: @escaping @Sendable () -> Void)
}
