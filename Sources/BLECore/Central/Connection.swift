/// One LE link to a peer, on the adapter's executor. It outlives drops when a reconnect
/// policy restores it: `handle` changes, `events()` keeps flowing, and hooks registered with
/// `onReconnect` (the GATT layer's re-subscriptions) run again.
///
///     let link = try await central.connect(peer)
///     for await event in await link.events() { print(event) }
public actor Connection {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let peer: LEAddress
    let host: HCIHost
    weak var central: Central?

    /// Connection_Handle while connected.
    public internal(set) var handle: UInt16?
    public internal(set) var parameters: ConnectionParameters
    public internal(set) var dataLength = DataLength()
    public internal(set) var phy: (tx: LEPHY, rx: LEPHY) = (.le1M, .le1M)
    /// The peer's LE features (bit mask of Vol 6, Part B, 4.6) once read.
    public internal(set) var remoteFeatures: UInt64?
    public internal(set) var reconnectPolicy: ReconnectPolicy
    /// What the application asked for when connecting (reused on reconnect).
    public internal(set) var requestParameters: ConnectionRequestParameters
    /// Set when the application asked for the disconnect: never reconnect then.
    var locallyClosed = false
    /// True while the link is down and its reconnect policy is restoring it; false once it is
    /// back (`.connected`) or the restore ended (`.reconnectFailed`).
    public internal(set) var isReconnecting = false
    /// Connection attempts the policy made since the last drop.
    var reconnectAttempts = 0
    /// The reason of the last drop, when not connected.
    public internal(set) var lastDisconnectReason: HCIStatus?
    let eventStream: Broadcaster<ConnectionEvent>
    var reconnectHooks: [@Sendable (Connection) async -> Void] = []
    /// Callers of `disconnect()` waiting for Disconnection Complete (true: the link ended or
    /// the wait timed out; false: the caller was cancelled).
    let disconnectWaiters: Waiters<Bool, Never>

    init(central: Central, host: HCIHost, peer: LEAddress, handle: UInt16, parameters: ConnectionParameters, policy: ReconnectPolicy, request: ConnectionRequestParameters) {
        self.requestParameters = request
        self.executor = host.executor
        self.host = host
        self.central = central
        self.peer = peer
        self.handle = handle
        self.parameters = parameters
        self.reconnectPolicy = policy
        self.eventStream = Broadcaster(executor: host.executor)
        self.disconnectWaiters = Waiters(executor: host.executor, scheduler: host.scheduler)
    }

    /// The central's timer source: timeouts of work on this link (the GATT layer's ATT
    /// transaction timer) run on it, so a manual clock in tests covers them too.
    public nonisolated var scheduler: any TimerScheduler { host.scheduler }

    public var isConnected: Bool { handle != nil }

    /// The lifecycle of this link from now on.
    public func events(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<ConnectionEvent> {
        eventStream.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// The ATT fixed channel (CID 0x0004) of the current link.
    public func attChannel() throws(ConnectionError) -> any L2CAPChannel {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        guard let channel = host.enter(on: executor, { $0.fixedChannel(handle: handle, channelID: L2CAPChannelID.att) }) else {
            throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost)
        }
        return channel
    }

    /// Registers work to redo each time the policy restores the link (the GATT layer
    /// re-subscribes its characteristics here).
    public func onReconnect(_ hook: @escaping @Sendable (Connection) async -> Void) {
        reconnectHooks.append(hook)
    }

    /// Ends the link; the reconnect policy does not apply. Returns once Disconnection Complete
    /// arrived (or the link was already gone). While the link is being restored it stops the
    /// restore (a pending attempt is cancelled) and emits `.reconnectFailed`. Cancelling the
    /// calling task throws `.command(peer:, .cancelled)` at once when the HCI Disconnect was
    /// not sent yet (the link stays up, as if not called), and
    /// `.command(peer:, .cancelledAfterSending)` once it was (the link still ends).
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection, timeout: Duration = .seconds(5)) async throws(ConnectionError) {
        let wasLocallyClosed = locallyClosed
        locallyClosed = true
        let linkDown = handle == nil
        central?.enter(on: executor) { $0.cancelReconnect(self, linkDown: linkDown) }
        guard let handle else {
            // Down and being restored: the restore ends here, and observers (a Peripheral's
            // waiting calls and streams) learn that the link will not come back.
            reconnectEnded(lastError: "disconnect() was called while the link was being restored")
            return
        }
        let command = HCICommand.disconnect(handle: handle, reason: reason)
        do throws(HCIError) {
            try await host.send(command)
        } catch {
            if case .commandFailed(_, .unknownConnectionIdentifier) = error { return }
            // Never sent: the link is up and nothing changed (no restore was under way).
            if case .cancelled = error, self.handle == handle { locallyClosed = wasLocallyClosed }
            throw .command(peer: peer, error)
        }
        if self.handle == nil { return }
        let ended = await disconnectWaiters.wait(deadline: (timeout, .success(true)), cancelled: { _ in .success(false) }).get()
        if !ended { throw .command(peer: peer, .cancelledAfterSending(opcode: command.opcode)) }
    }

    func resumeDisconnectWaiters() {
        disconnectWaiters.resumeAll(with: .success(true))
    }

    /// Reads the RSSI of the link (HCI_Read_RSSI), in dBm.
    public func readRSSI() async throws(ConnectionError) -> Int8 {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        do throws(HCIError) {
            return try await host.read(HCIReturn.ReadRSSI.self, HCICommand.readRSSI(handle: handle)).rssi
        } catch {
            throw .command(peer: peer, error)
        }
    }

    /// Asks the controller for new connection parameters (HCI_LE_Connection_Update).
    public func updateParameters(_ range: ConnectionParameterRange) async throws(ConnectionError) {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        do throws(HCIError) {
            try await host.send(HCICommand.leConnectionUpdate(handle: handle, range.hciParameters))
        } catch {
            throw .command(peer: peer, error)
        }
    }

    // MARK: - Driven by the central on the executor

    func emit(_ event: ConnectionEvent) {
        eventStream.yield(event)
        central?.enter(on: executor) { $0.connectionEventStream.yield(PeerConnectionEvent(peer: peer, event: event)) }
    }

    func attached(handle: UInt16, parameters: ConnectionParameters) {
        self.handle = handle
        isReconnecting = false
        self.parameters = parameters
        lastDisconnectReason = nil
        emit(.connected(handle: handle, parameters: parameters))
    }

    func detached(reason: HCIStatus, willReconnect: Bool) {
        handle = nil
        lastDisconnectReason = reason
        isReconnecting = willReconnect
        reconnectAttempts = 0
        emit(.disconnected(reason: reason, willReconnect: willReconnect))
        resumeDisconnectWaiters()
    }

    /// The transport is gone: the link ends for good.
    func transportLost(_ why: String) {
        locallyClosed = true
        if handle != nil {
            detached(reason: .connectionTerminatedByLocalHost, willReconnect: false)
        } else {
            reconnectEnded(lastError: "transport lost: \(why)")
            resumeDisconnectWaiters()
        }
    }

    /// The restore of the link stopped for good: `.reconnectFailed`, once per outage, and
    /// only while one was under way.
    func reconnectEnded(lastError: String) {
        guard isReconnecting else { return }
        isReconnecting = false
        emit(.reconnectFailed(attempts: reconnectAttempts, lastError: lastError))
    }

    func runReconnectHooks() async {
        for hook in reconnectHooks { await hook(self) }
    }
}

/// A connection event together with the peer it concerns (`central.connectionEvents()`).
public struct PeerConnectionEvent: Sendable, Hashable, CustomStringConvertible {
    public var peer: LEAddress
    public var event: ConnectionEvent
    public var description: String { "\(peer): \(event)" }
}
