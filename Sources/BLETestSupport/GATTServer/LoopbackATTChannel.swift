import Dispatch
import Synchronization
import GATTClient
import BLEWire
import BLECore
import GATTServer
import BLETransport

/// An in-memory ATT channel: the client end is an `L2CAPChannel`, the far end an
/// `ATTServerLink` into a `SimulatedATTServer`, both on one adapter queue. Client SDUs reach
/// the server in order; the server's PDUs reach the client's handler on a later turn of the
/// queue, as a real link would deliver them.
///
///     let channel = LoopbackATTChannel(server: GATTServer(database: .lab(), queue: executor.queue), executor: executor)
///     let peripheral = Peripheral(channel: channel)
public final class LoopbackATTChannel: L2CAPChannel {
    public let executor: AdapterExecutor
    public let peerDescription: String
    /// The server's end of the link (set its security to test permission errors).
    public let serverLink: LoopbackServerLink
    let server: any SimulatedATTServer

    /// The client's handlers and how the link ended, on `executor.queue`.
    private struct State {
        var receiveHandler: (@Sendable ([UInt8]) -> Void)?
        var closeHandler: (@Sendable (LinkError) -> Void)?
        var closed: LinkError?
        /// The client's tasks on this channel still running (`adoptTask`), by number.
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextTask: UInt64 = 0
    }
    private let state: QueueConfined<State>

    public init(server: any SimulatedATTServer, executor: AdapterExecutor, peerDescription: String = "F0:F1:F2:F3:F4:F5") {
        self.executor = executor
        self.peerDescription = peerDescription
        self.server = server
        state = QueueConfined(State(), on: executor.queue)
        let link = LoopbackServerLink(queue: executor.queue)
        self.serverLink = link
        // The link learns its channel before the server learns the link, so it cannot send earlier.
        let connect: @Sendable () -> Void = { [weak self] in
            link.channel.value.channel = self
            server.linkConnected(link)
        }
        if executor.isOnQueue { connect() } else { executor.queue.async(execute: connect) }
    }

    /// Runs the client's background work (a cache store, a CCCD write after the last
    /// subscriber left) in tasks that `adoptedTasksEnded()` waits for. Called on the executor.
    public func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool {
        let id = state.value.nextTask
        state.value.nextTask += 1
        state.value.tasks[id] = Task { [executor, state] in
            await work()
            executor.queue.async { state.value.tasks[id] = nil }
        }
        return true
    }

    /// Returns once every task adopted so far has ended.
    ///
    ///     await bed.channel.adoptedTasksEnded() // the cache store the error scheduled is done
    package func adoptedTasksEnded() async {
        let tasks = await withCheckedContinuation { c in executor.queue.async { c.resume(returning: Array(self.state.value.tasks.values)) } }
        for task in tasks { await task.value }
    }

    public func send(_ sdu: [UInt8]) async throws(LinkError) {
        if executor.isOnQueue {
            if let closed = state.value.closed { throw closed }
            server.receive(sdu, from: serverLink)
            return
        }
        let failure: LinkError? = await withCheckedContinuation { c in
            executor.queue.async {
                if let closed = self.state.value.closed { c.resume(returning: closed); return }
                self.server.receive(sdu, from: self.serverLink)
                c.resume(returning: nil)
            }
        }
        if let failure { throw failure }
    }

    public func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        let install: @Sendable () -> Void = {
            self.state.value.receiveHandler = receive
            self.state.value.closeHandler = close
        }
        if executor.isOnQueue { install() } else { executor.queue.sync(execute: install) }
    }

    /// Delivers `sdu` to the client now (call on the queue): the server side and the
    /// notification throughput checks use it.
    public func deliverToClient(_ sdu: [UInt8]) {
        guard state.value.closed == nil, let receive = state.value.receiveHandler else { return }
        receive(sdu)
    }

    /// Drops the link: the client's channel closes with Disconnection Complete `reason`, the
    /// server sees the link go.
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            executor.queue.async {
                if self.state.value.closed == nil {
                    let error = LinkError.disconnected(peer: BluetoothAddress(self.peerDescription) ?? .zero, reason: reason)
                    self.state.value.closed = error
                    let close = self.state.value.closeHandler
                    close?(error)
                    self.server.linkDisconnected(self.serverLink)
                }
                c.resume()
            }
        }
    }
}

/// The server's end of a `LoopbackATTChannel`.
public final class LoopbackServerLink: ATTServerLink, ATTServerLinkSecurity {
    let queue: DispatchQueue
    /// Where the server's PDUs go; set on the queue before the server learns the link.
    let channel: QueueConfined<ChannelReference>
    private let encrypted = Atomic<Bool>(false)
    private let authenticated = Atomic<Bool>(false)
    private let keySize = Atomic<Int>(16)
    public let centralDescription = "loopback central"

    /// The channel, held weakly (it holds the link).
    struct ChannelReference {
        weak var channel: LoopbackATTChannel?
    }

    init(queue: DispatchQueue) {
        self.queue = queue
        channel = QueueConfined(ChannelReference(), on: queue)
    }

    /// Whether the link counts as encrypted; a test may set it at any time.
    public var isEncrypted: Bool {
        get { encrypted.load(ordering: .relaxed) }
        set { encrypted.store(newValue, ordering: .relaxed) }
    }

    /// Whether the link counts as authenticated; a test may set it at any time.
    public var isAuthenticated: Bool {
        get { authenticated.load(ordering: .relaxed) }
        set { authenticated.store(newValue, ordering: .relaxed) }
    }

    /// The encryption key size in octets (7...16); a test may set it at any time.
    public var encryptionKeySize: Int {
        get { keySize.load(ordering: .relaxed) }
        set { keySize.store(newValue, ordering: .relaxed) }
    }

    public func sendToCentral(_ pdu: [UInt8]) {
        let channel = channel
        queue.async { channel.value.channel?.deliverToClient(pdu) }
    }
}
