import BLEWire
import BLETransport

/// One LE link to a peer, on the adapter's executor. It outlives drops when a reconnect
/// policy restores it: `handle` changes, `events()` keeps flowing, and hooks registered with
/// `onReconnect` (the GATT layer's re-subscriptions) run again.
///
///     let link = try await central.connect(peer)
///     for await event in await link.events() { print(event) }
public actor Connection: AdapterIsolated {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let peer: LEAddress
    /// Our role on the link: `.central` for links from `Central.connect`, `.peripheral` for
    /// links a remote central opened to one of our advertising sets.
    public nonisolated let role: LinkRole
    let host: HCIHost
    nonisolated weak let central: Central?

    public internal(set) var parameters: ConnectionParameters
    public internal(set) var dataLength = DataLength()
    public internal(set) var phy: (tx: LEPHY, rx: LEPHY) = (.le1M, .le1M)
    /// The peer's LE features (bit mask of Vol 6, Part B, 4.6) once read.
    public internal(set) var remoteFeatures: UInt64?
    /// What the application asked for when connecting; reconnect attempts reuse all of it.
    public var reconnectPolicy: ReconnectPolicy { lifecycle.policy }
    public var requestParameters: ConnectionRequestParameters { connectOptions.parameters }
    /// The connect timeout, which bounds every reconnect attempt too.
    public var connectTimeout: Duration { connectOptions.timeout }
    /// The options of `Central.connect`, set once: the central compares a second connect's
    /// with them, with no claim on this actor's isolation.
    nonisolated let connectOptions: ConnectOptions
    /// The one state machine of the link (`LinkLifecycle`); only `advance` (Connection+Lifecycle.swift) feeds it.
    var lifecycle: Lifecycle
    /// Observers of `linkState` (the GATT layer), called on the executor at each transition.
    var linkStateObservers: [@Sendable (LinkState) -> Void] = []
    let linkStateStream: Broadcaster<LinkState>
    /// The states of the link since its first connect attempt, oldest first: the last
    /// `linkStateHistoryLimit` of them (`linkStates()` replays them to each subscriber).
    var linkStateHistory: [LinkState]
    static let linkStateHistoryLimit = 32
    let eventStream: Broadcaster<ConnectionEvent>
    /// This side's address on the link as the central made it (its random address when it
    /// connected with one); nil: the controller's public address. The central sets it on the
    /// adapter queue (a peripheral link's comes from its advertising set), with no claim on
    /// this actor's isolation.
    nonisolated var ownLinkAddress: LEAddress? {
        get { ownLinkAddressState.value }
        set { ownLinkAddressState.value = newValue }
    }
    private nonisolated let ownLinkAddressState: QueueConfined<LEAddress?>
    /// Encryption of the link (see Connection+Security.swift).
    public var securityLevel: SecurityLevel { linkSecurity.value.level }
    /// The link's security level and key size, confined to the adapter queue, where a GATT
    /// server reads them at each request that checks permissions without a claim on this
    /// actor's isolation.
    package nonisolated let linkSecurity: QueueConfined<LinkSecurity>
    var security = ConnectionSecurity()
    var reconnectHooks: [@Sendable (Connection) async -> Void] = []
    /// Callers of `disconnect()` waiting for Disconnection Complete.
    let disconnectWaiters: Waiters<DisconnectWait, Never>

    /// How a wait for Disconnection Complete ended.
    enum DisconnectWait: Sendable, Equatable {
        /// The link ended (or the wait's bound passed).
        case ended
        /// The waiting task was cancelled.
        case cancelled
        /// Disconnection Complete or the Command Status of HCI Disconnect carried `status`:
        /// the link is still up.
        case refused(HCIStatus)
    }

    init(central: Central, host: HCIHost, peer: LEAddress, handle: UInt16, parameters: ConnectionParameters, options: ConnectOptions,
         role: LinkRole = .central) {
        self.connectOptions = options
        self.lifecycle = Lifecycle(handle: handle, policy: options.reconnect)
        self.role = role
        // The first attempt ran before the connection existed (`Central.connect`): it is
        // the story's first state. A peripheral-role link starts connected.
        self.linkStateHistory = role == .central ? [.connecting(attempt: 1), .connected(handle: handle)] : [.connected(handle: handle)]
        self.executor = host.executor
        self.host = host
        self.central = central
        self.peer = peer
        self.parameters = parameters
        self.eventStream = Broadcaster(executor: host.executor)
        self.ownLinkAddressState = QueueConfined(nil, on: host.executor.queue)
        self.linkSecurity = QueueConfined(LinkSecurity(), on: host.executor.queue)
        self.linkStateStream = Broadcaster(executor: host.executor)
        self.disconnectWaiters = Waiters(executor: host.executor, scheduler: host.scheduler)
    }

    /// The central's timer source: timeouts of work on this link (the GATT layer's ATT
    /// transaction timer) run on it, so a manual clock in tests covers them too.
    public nonisolated var scheduler: any TimerScheduler { host.scheduler }

    /// Connection_Handle while connected (or disconnecting).
    public var handle: UInt16? {
        switch lifecycle.phase {
        case .connected(let h), .disconnecting(let h, _, _): return h
        case .restoring, .closed: return nil
        }
    }

    public var isConnected: Bool { handle != nil }

    var isDisconnecting: Bool {
        if case .disconnecting = lifecycle.phase { return true }
        return false
    }

    /// True while the link is down and its reconnect policy is restoring it; false once it is
    /// back (`.connected`) or the restore ended (`.reconnectFailed`).
    public var isReconnecting: Bool {
        if case .restoring = lifecycle.phase { return true }
        return false
    }

    /// The reason of the last drop, when not connected.
    public var lastDisconnectReason: HCIStatus? {
        switch lifecycle.phase {
        case .connected, .disconnecting: return nil
        case .restoring(let r): return r.reason
        case .closed(_, let reason): return reason
        }
    }

    /// The state of the link now.
    public var linkState: LinkState { lifecycle.phase.state }

    /// The story of the link from its first connect attempt (`.connecting(attempt: 1)`,
    /// `.connected`, and every state since, the last 32 of them), then every change as it
    /// happens; the last state replayed is the state now (`LinkState` draws the transitions).
    ///
    ///     for await state in await link.linkStates() { print(state) } // connecting (attempt 1), connected (handle 0x0040), ...
    public func linkStates(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<LinkState> {
        linkStateStream.subscribe(bufferingPolicy: bufferingPolicy, history: linkStateHistory)
    }

    /// Calls `observer` with the state now and then at every transition, on the executor in
    /// the same turn as the transition: the GATT layer follows the link with it, so a call
    /// made right after a drop already sees the link down.
    package func observeLinkState(_ observer: @escaping @Sendable (LinkState) -> Void) {
        linkStateObservers.append(observer)
        observer(linkState)
    }

    /// The lifecycle of this link from now on.
    public func events(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<ConnectionEvent> {
        eventStream.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// The ATT fixed channel (CID 0x0004) of the current link.
    public func attChannel() throws(ConnectionError) -> any L2CAPChannel {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        guard let channel = host.assumeIsolated({ $0.fixedChannel(handle: handle, channelID: L2CAPChannelID.att) }) else {
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
    /// arrived (or the link was already gone); a second call while the first waits sends HCI
    /// Disconnect again and waits for the same Disconnection Complete. While the link is being restored it stops the restore
    /// (a pending attempt is cancelled) and emits `.reconnectFailed`. Cancelling the calling
    /// task throws `.command(peer:, .cancelled)` at once when the HCI Disconnect was not sent
    /// yet (the link stays up, as if not called), and `.command(peer:, .cancelledAfterSending)`
    /// once it was (the link still ends). A controller that keeps the link (an error status in
    /// the Command Status or the Disconnection Complete) throws `.command(peer:, .commandFailed)`.
    ///
    ///     try await link.disconnect()
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection, timeout: Duration = .seconds(5)) async throws(ConnectionError) {
        // Down and being restored: the restore ends here, and observers (a Peripheral's
        // waiting calls and streams) learn that the link will not come back.
        let actions = advance(.disconnectRequested(ifRestoring: "disconnect() was called while the link was being restored"))
        for case .sendDisconnect(let handle) in actions {
            guard try await sendDisconnect(HCICommand.disconnect(handle: handle, reason: reason)) else { return }
            return try await awaitDisconnection(timeout: timeout)
        }
    }

    /// Waits for Disconnection Complete of the HCI Disconnect out, at most `timeout`.
    private func awaitDisconnection(timeout: Duration) async throws(ConnectionError) {
        let opcode = HCICommand.Disconnect.opcode
        switch await waitForDisconnectionComplete(timeout: timeout) {
        case .ended: return
        case .cancelled: throw .command(peer: peer, .cancelledAfterSending(opcode: opcode))
        case .refused(let status): throw .command(peer: peer, .commandFailed(opcode: opcode, status: status))
        }
    }

    /// Sends HCI Disconnect (`command`) and waits for its Command Status; false when the
    /// controller no longer knows the handle (the link is gone already).
    func sendDisconnect(_ command: HCICommandPacket, timeout: Duration? = nil) async throws(ConnectionError) -> Bool {
        do throws(HCIError) {
            try await host.send(command, timeout: timeout)
        } catch {
            switch error {
            case .commandFailed(_, let status):
                advance(.disconnectRefused(status))
                if status == .unknownConnectionIdentifier { return false }
            case .cancelled:
                // Never sent: the link is up and nothing changed.
                advance(.disconnectNotSent)
            default:
                break
            }
            throw .command(peer: peer, error)
        }
        advance(.disconnectAcknowledged)
        return true
    }

    /// Waits for Disconnection Complete: `.ended` once the link is down or `timeout` passed.
    func waitForDisconnectionComplete(timeout: Duration) async -> DisconnectWait {
        if handle == nil { return .ended }
        return await disconnectWaiters.wait(deadline: (timeout, .success(.ended)), cancelled: { _ in .success(.cancelled) }).get()
    }

    /// For `Central.close()`: ends a restore under way, or sends HCI Disconnect for the link
    /// and waits at most `timeout` for its Command Status (not for the link to go down).
    func startClosing(reason: HCIStatus, timeout: Duration) async {
        let actions = advance(.disconnectRequested(ifRestoring: "the central was closed while the link was being restored"))
        for case .sendDisconnect(let handle) in actions {
            _ = try? await sendDisconnect(HCICommand.disconnect(handle: handle, reason: reason), timeout: timeout)
        }
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

    /// As the peripheral of the link, asks the central for new connection parameters with an
    /// L2CAP Connection Parameter Update Request (Vol 3, Part A, 4.20) and waits at most
    /// `timeout` for its response. Returns once the central accepted; `.parametersUpdated`
    /// follows when it has applied them.
    ///
    ///     try await link.requestParameterUpdate(ConnectionParameterRange(minimumInterval: 24, maximumInterval: 40, peripheralLatency: 0, supervisionTimeout: 400))
    public func requestParameterUpdate(_ range: ConnectionParameterRange, timeout: Duration = .seconds(30)) async throws(ParameterUpdateRequestError) {
        guard role == .peripheral else { throw .notPeripheral(peer: peer.address) }
        guard let handle else { throw .link(.disconnected(peer: peer.address, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost)) }
        try await host.requestConnectionParameterUpdate(handle: handle, range, timeout: timeout)
    }

    /// Tells the link's subscribers and the central's `connectionEvents()` `event`. Called on
    /// the adapter queue.
    nonisolated func emit(_ event: ConnectionEvent) {
        eventStream.yield(event)
        central?.connectionEventStream.yield(PeerConnectionEvent(peer: peer, event: event))
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
