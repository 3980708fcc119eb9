import BLEWire
import BLETransport

/// The adapter as the application uses it: state, scanning, connections. One per controller,
/// on the adapter's serial executor, opened from a transport string.
///
///     let central = try await Central.open("tcp:127.0.0.1:9000")
///     for await state in await central.stateEvents() where state == .poweredOn { break }
///     let link = try await central.connect(LEAddress("F0:F1:F2:F3:F4:F5", type: .random)!)
public actor Central: AdapterIsolated {
    /// How the central opens and drives its controller.
    public struct Options: Sendable {
        /// Send HCI_Reset and configure the controller (true for user-channel and H4 transports;
        /// false for hci-raw, where the kernel owns the controller).
        public var resetController: Bool? = nil
        public var commandTimeout: Duration = .seconds(2)
        /// How long to wait for the completion of a cancelled connection attempt.
        public var connectCancelTimeout: Duration = .seconds(2)
        public var logger = BLELogger.silent
        /// Tests pass a manual scheduler to advance time without waiting. Its work must run on
        /// the adapter queue: pass that queue's `executor` too.
        public var scheduler: (any TimerScheduler)? = nil
        /// The adapter executor to run on; nil creates one. A `scheduler` built on a queue must
        /// be given that queue's executor here, since timer work enters the central on it.
        public var executor: AdapterExecutor? = nil
        /// Label of the executor's queue.
        public var label = "adapter"
        /// After a Hardware Error, reset and set up the controller again at once, as
        /// `powerOn()` does, instead of staying `.resetting` until the application calls it.
        public var resetAfterHardwareError = false
        /// Limits for a peripheral's Connection Parameter Update Request; nil accepts every
        /// valid request.
        public var parameterUpdatePolicy: (@Sendable (UInt16, ConnectionParameterRange) -> Bool)? = nil
        /// When the transport is lost, reopen the adapter on its own with this policy (see
        /// `reopen(_:)`); nil leaves it `.transportLost` until the application calls `reopen`.
        public var reopenAfterTransportLoss: AdapterReopenPolicy? = nil
        /// How background connections (`connect(whenSeen:)`) and a scan take turns on a
        /// controller that cannot scan and initiate at once.
        public var backgroundScanWindows = BackgroundScanWindows()
        public init() {}
    }

    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let host: HCIHost
    public nonisolated let options: Options
    nonisolated let scheduler: any TimerScheduler
    nonisolated let spec: String

    /// The adapter's state (kept in `facts`, where its connections read it; `setState`
    /// changes it).
    public var state: AdapterState { facts.value.state }
    /// The state and the controller's description, confined to the adapter queue
    /// (AdapterFacts.swift).
    nonisolated let facts: QueueConfined<AdapterFacts>
    var stateReason: String?
    let stateStream: Broadcaster<AdapterState>
    let connectionEventStream: Broadcaster<PeerConnectionEvent>
    /// Reopen attempts (Central+Reopen.swift).
    let reopenEventStream: Broadcaster<AdapterReopenEvent>
    var reopening = ReopenState()
    /// What the controller said about itself during bring-up.
    public var controllerInfo: ControllerInfo? { facts.value.controllerInfo }
    var started = false

    /// Live connections by handle, and every connection object (also those reconnecting) by peer.
    var connectionsByHandle: [UInt16: Connection] = [:]
    var connectionsByPeer: [LEAddress: Connection] = [:]
    var pendingConnect: PendingConnect?
    /// Devices connected as they come into range (Central+Background.swift).
    var backgroundConnect: BackgroundConnect?
    /// The address it scans and connects with (OwnAddress.swift).
    var ownAddress = OwnAddressState()
    var connectBusy = false
    /// Callers waiting for the one connect turn, first come first served (false: cancelled).
    let connectTurns: Waiters<Bool, Never>
    /// The caller of the pending attempt, while it waits for the completion.
    let connectWaiters: Waiters<ConnectWaitOutcome, Never>
    let scanner: Scanner
    /// Answers LE Long Term Key Requests from stored keys (Central+Security.swift).
    var longTermKeyProvider: LongTermKeyProvider?
    /// The Security Manager's state that outlives a link (module SMP: pairing back-off).
    package var securityState: (any AnyObject & Sendable)?
    /// Runs (on the executor) for each peripheral-role link before it is offered to
    /// `incomingConnections()` subscribers (module SMP: `Central.acceptPairing`).
    package var peripheralLinkSetup: (@Sendable (Connection) -> Void)?
    /// Advertising sets and peripheral-role links (Peripheral/Central+Advertising.swift).
    var advertising: AdvertisingRegistry

    /// Opens the transport named by `spec` (see `TransportSpec`) and brings the controller up.
    public static func open(_ spec: String, options: Options = Options()) async throws -> Central {
        let parsed = try TransportSpec.parse(spec)
        var options = options
        if options.resetController == nil, case .hciRaw = parsed { options.resetController = false }
        // Opened now, so a failure is thrown here; opened anew by `reopen`.
        let transport = try parsed.open()
        let central = Central(transport: DeferredTransport(name: transport.name, first: transport) { () throws(TransportError) in try parsed.open() }, options: options)
        try await central.powerOn()
        return central
    }

    /// A central over an already opened transport; call `powerOn()` next.
    public init(transport: any HCITransport, options: Options = Options()) {
        let executor = options.executor ?? AdapterExecutor(label: options.label)
        self.executor = executor
        self.scheduler = options.scheduler ?? DispatchTimerScheduler(queue: executor.queue)
        self.host = HCIHost(transport: transport, executor: executor, scheduler: scheduler, logger: options.logger)
        self.options = options
        self.spec = transport.name
        self.facts = QueueConfined(AdapterFacts(), on: executor.queue)
        self.stateStream = Broadcaster(executor: executor, replay: .latest)
        self.connectionEventStream = Broadcaster(executor: executor)
        self.reopenEventStream = Broadcaster(executor: executor)
        self.scanner = Scanner(host: host, scheduler: scheduler, logger: options.logger)
        self.connectTurns = Waiters(executor: executor, scheduler: scheduler)
        self.connectWaiters = Waiters(executor: executor, scheduler: scheduler)
        self.advertising = AdvertisingRegistry(executor: executor)
    }

    // MARK: - State

    /// The adapter state now and from now on (a new subscriber first gets the current state):
    /// the central's one state stream. `snapshot` adds scanning, the link count and the reason.
    ///
    ///     for await state in await central.stateEvents() where state == .poweredOn { break }
    public func stateEvents(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<AdapterState> {
        if stateStream.latestValue == nil { stateStream.yield(state) }
        return stateStream.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// A snapshot for UI code.
    public var snapshot: AdapterSnapshot {
        AdapterSnapshot(state: state, isScanning: scanner.isScanning, connectionCount: connectionsByHandle.count, reason: stateReason)
    }

    func setState(_ new: AdapterState, reason: String? = nil) {
        stateReason = reason
        guard new != state else { return }
        facts.value.state = new
        scanner.adapterState = new
        stateStream.yield(new)
    }

    /// Lifecycle events of every link of this central.
    public func connectionEvents(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<PeerConnectionEvent> {
        connectionEventStream.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// Starts the transport and brings the controller up (reset, read its capabilities, set the
    /// event masks). Sets the state to powered on, or throws and sets the state that explains why.
    @discardableResult
    public func powerOn() async throws -> ControllerInfo {
        if !started {
            started = true
            await host.setParameterUpdatePolicyIfAny(options.parameterUpdatePolicy)
            // Once per HCI event the host passes on (an extended advertising report among
            // them): the per-packet entry, which captures nothing.
            await host.addEventHandler { [weak self] event in
                guard let self else { return }
                runIsolated(event) { central, event in central.handle(event) }
            }
            await host.setAdvertisingReportReader { [reference = scanner.reference] parameters in
                reference.scanner?.takeAdvertisingReports(parameters) ?? false
            }
            do {
                try await host.start()
            } catch {
                setState(AdapterState(openError: error), reason: "\(error)")
                throw error
            }
        }
        let reset = options.resetController ?? true
        // HCI_Reset ends every link and the scan at the controller: the host forgets them too.
        if reset { controllerWasReset(.reset) }
        setState(.resetting)
        do {
            let info = try await host.initializeController(reset: reset)
            facts.value.controllerInfo = info
            guard info.supportsLE else {
                setState(.unsupported, reason: "the controller does not support LE")
                throw HCIError.commandFailed(opcode: HCIOpcode(rawValue: 0x2003), status: HCIStatus(rawValue: 0x11))
            }
            await restoreOwnAddress()
            scanner.configure(info: info)
            setState(.poweredOn)
            adapterPoweredOn()
            return info
        } catch let error as HCIError {
            if state == .resetting { setState(.transportLost, reason: "\(error)") }
            throw error
        }
    }

    /// Disconnects every link, stops scanning and closes the transport. Returns once the
    /// transport has released its endpoint (the socket or device file descriptor is closed),
    /// so the same adapter can be opened again right away. HCI Disconnect goes out for every
    /// link even when the calling task is cancelled (an application closing on Ctrl-C leaves
    /// no link up at the controller); close then waits at most a second for each Command
    /// Status (plus the rest of the timeout of a command that holds the credit when the
    /// Disconnect is queued behind it), and for the Disconnection Complete events only while
    /// the caller is not cancelled, again at most a second.
    ///
    ///     await central.close()
    public func close() async {
        await endReopen()
        await stopAllAdvertising()
        stopBackgroundConnect(error: nil)
        await disconnectAllForClose(reason: .remoteUserTerminatedConnection, bound: .seconds(1))
        await scanner.close()
        await host.close()
        await host.endBackground()
        await waitForTransportRelease(timeout: .seconds(2))
        setState(.poweredOff)
        stateStream.finish()
        connectionEventStream.finish()
        reopenEventStream.finish()
        advertising.incoming.finish()
    }

    /// Ends every link and reconnect attempt at once, as the loss of the controller does:
    /// each Connection reports `disconnected(willReconnect: false)` and fails its pending work.
    func endAllLinks(reason: String) {
        let connections = Array(connectionsByPeer.values)
        connectionsByPeer.removeAll()
        connectionsByHandle.removeAll()
        for connection in connections {
            connection.assumeIsolated { $0.transportLost(reason) }
        }
    }

    // MARK: - Events

    func handle(_ event: HostEvent) {
        switch event {
        case .transportLost(let why):
            scanner.transportLost(why)
            failPendingConnect(.command(peer: pendingConnect?.peer ?? LEAddress(.zero, type: .public), .transportLost(why)))
            // No link survives its controller: every connection ends now (no reconnect, the
            // adapter is gone), so its events, disconnect waiters and GATT users learn it.
            endAllLinks(reason: why)
            advertisingLost("the transport was lost: \(why)")
            setState(.transportLost, reason: why)
            reopenAfterLossIfAsked()
        case .event(let e):
            handle(e)
        }
    }

    func handle(_ event: HCIEvent) {
        if scanner.handle(event) { return }
        handleConnectionEvent(event)
    }
}
