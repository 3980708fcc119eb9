import Dispatch
import GATTClient
import BLEWire
import BLECore
import GATTServer

/// An in-memory ATT channel: the client end is an `L2CAPChannel`, the far end an
/// `ATTServerLink` into a `SimulatedATTServer`, both on one adapter queue. Client SDUs reach
/// the server in order; the server's PDUs reach the client's handler on a later turn of the
/// queue, as a real link would deliver them.
///
///     let channel = LoopbackATTChannel(server: GATTServer(database: .lab(), queue: executor.queue), executor: executor)
///     let peripheral = Peripheral(channel: channel)
public final class LoopbackATTChannel: L2CAPChannel, @unchecked Sendable { // handlers and `closed` are touched only on executor.queue
    public let executor: AdapterExecutor
    public let peerDescription: String
    /// The server's end of the link (set its security to test permission errors).
    public let serverLink: LoopbackServerLink
    let server: any SimulatedATTServer
    private var receiveHandler: (@Sendable ([UInt8]) -> Void)?
    private var closeHandler: (@Sendable (LinkError) -> Void)?
    private var closed: LinkError?

    public init(server: any SimulatedATTServer, executor: AdapterExecutor, peerDescription: String = "F0:F1:F2:F3:F4:F5") {
        self.executor = executor
        self.peerDescription = peerDescription
        self.server = server
        let link = LoopbackServerLink(queue: executor.queue)
        self.serverLink = link
        link.channel = self
        let connect: @Sendable () -> Void = { server.linkConnected(link) }
        if executor.isOnQueue { connect() } else { executor.queue.async(execute: connect) }
    }

    public func send(_ sdu: [UInt8]) async throws(LinkError) {
        if executor.isOnQueue {
            if let closed { throw closed }
            server.receive(sdu, from: serverLink)
            return
        }
        let failure: LinkError? = await withCheckedContinuation { c in
            executor.queue.async {
                if let closed = self.closed { c.resume(returning: closed); return }
                self.server.receive(sdu, from: self.serverLink)
                c.resume(returning: nil)
            }
        }
        if let failure { throw failure }
    }

    public func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        receiveHandler = receive
        closeHandler = close
    }

    /// Delivers `sdu` to the client now (call on the queue): the server side and the
    /// notification throughput checks use it.
    public func deliverToClient(_ sdu: [UInt8]) {
        guard closed == nil else { return }
        receiveHandler?(sdu)
    }

    /// Drops the link: the client's channel closes with Disconnection Complete `reason`, the
    /// server sees the link go.
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            executor.queue.async {
                if self.closed == nil {
                    let error = LinkError.disconnected(peer: BluetoothAddress(self.peerDescription) ?? .zero, reason: reason)
                    self.closed = error
                    self.closeHandler?(error)
                    self.server.linkDisconnected(self.serverLink)
                }
                c.resume()
            }
        }
    }
}

/// The server's end of a `LoopbackATTChannel`.
public final class LoopbackServerLink: ATTServerLink, ATTServerLinkSecurity, @unchecked Sendable { // state is touched only on the adapter queue, or set by a test before traffic starts
    let queue: DispatchQueue
    weak var channel: LoopbackATTChannel?
    public var isEncrypted = false
    public var isAuthenticated = false
    public var encryptionKeySize = 16
    public let centralDescription = "loopback central"

    init(queue: DispatchQueue) { self.queue = queue }

    public func sendToCentral(_ pdu: [UInt8]) {
        queue.async { [weak self] in self?.channel?.deliverToClient(pdu) }
    }
}
