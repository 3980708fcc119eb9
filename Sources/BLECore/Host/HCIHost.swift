import Dispatch
import BLEWire
import BLETransport

/// What the host passes up to the central.
public enum HostEvent: Sendable {
    case event(HCIEvent)
    /// The transport closed or failed; nothing more will arrive.
    case transportLost(String)
}

/// The host side of HCI for one controller: it reads the transport and routes what arrives.
/// Each job has its own file: command flow control (`HCIHost+Commands.swift`), ACL credits,
/// fragmentation and reassembly (`HCIHost+ACL.swift`), a link's end (`HCIHost+LinkEnd.swift`), the L2CAP fixed channels
/// (`HCIHost+L2CAP.swift`), controller bring-up (`HCIHost+Setup.swift`). Runs on the adapter
/// executor; the transport delivers every packet on that executor's queue and it is handled
/// right there.
///
///     let host = HCIHost(transport: try TransportSpec.parse("tcp:127.0.0.1:9000").open(), executor: AdapterExecutor(label: "tcp"))
///     try await host.start()
///     let params = try await host.send(HCICommand.reset())
public actor HCIHost: AdapterIsolated {
    public nonisolated let executor: AdapterExecutor
    public nonisolated let transport: any HCITransport
    public nonisolated let scheduler: any TimerScheduler
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public var logger: BLELogger
    /// Timeout for a command when the caller gives none.
    public var defaultCommandTimeout: Duration = .seconds(2)

    // MARK: Command flow control (Vol 4, Part E, 4.4)
    /// Command credits and ACL buffers as one value (HCIFlowControl.swift).
    // Unchecked exclusivity: touched only on the executor, and read per ACL fragment.
    @exclusivity(unchecked) var flow = HCIFlowControl()
    /// Num_HCI_Command_Packets: how many commands the controller accepts now.
    public var commandCredits: Int { flow.commandCredits }
    var waitingCommands: [PendingCommand] = []
    var sentCommands: [PendingCommand] = []
    /// HCI_Reset commands this host sent whose Command Complete has not come, and whether one
    /// came: a Reset completion when none is outstanding, after this host's own reset, was
    /// sent by another host (`controllerResetElsewhere`); one before it is a previous
    /// program's answer still in a UART's buffer.
    var unansweredResets = 0
    var ownResetCompleted = false
    /// Opcodes whose last command timed out and whose answer carries no Connection_Handle:
    /// the next command with that opcode waits until the late answer comes or the grace ends.
    var lateAnswerHolds: [HCIOpcode: any ScheduledTimer] = [:]
    /// The callers of `send`, by the id their command carries.
    let commandWaiters: Waiters<[UInt8], HCIError>

    // MARK: Events
    /// Receives every event the host does not consume itself, in order, on the executor.
    var eventHandlers: [@Sendable (HostEvent) -> Void] = []
    /// Takes LE Advertising Report events in place, before they are decoded (`Central`'s
    /// scanner); true when taken. Used only while it is the sole event handler's, so an
    /// observer added with `addEventHandler` still sees every report.
    var advertisingReportReader: ((UnsafeRawBufferPointer) -> Bool)?
    /// Receives raw event packets that failed to decode (also logged).
    public internal(set) var undecodableEvents = 0

    // MARK: ACL
    // Unchecked exclusivity on the state the send path reads per packet, here and in `Link`:
    // touched only on the executor, one job at a time; the dynamic checks showed per K-frame
    // in the profile.
    /// LE_ACL_Data_Packet_Length: the largest ACL payload the controller takes.
    public var aclPacketLength: Int { flow.aclPacketLength }
    /// Total_Num_LE_ACL_Data_Packets.
    public var aclPacketCount: Int { flow.aclPacketCount }
    /// Controller buffers free right now.
    public var aclCredits: Int { flow.aclCredits }
    /// The links by handle, and the fast path for their notifications.
    let inlet: ACLInlet
    var links: [UInt16: Link] {
        get { inlet.links }
        _modify { yield &inlet.links }
    }
    /// The callers of `sendL2CAP`, by the id the PDU's last fragment carries: resumed by the
    /// first of that fragment going to the controller, the link ending, or the caller's
    /// cancellation.
    let sendWaiters: Waiters<Void, LinkError>
    /// The callers of credit-based channel requests on the LE signaling channel (open,
    /// enhanced open, reconfigure), by the request's pending entry (HCIHost+CreditBasedChannels.swift).
    let channelRequestWaiters: Waiters<[CreditBasedChannel], L2CAPChannelError>
    /// The peripheral's Connection Parameter Update Requests, by link (HCIHost+ParameterRequest.swift).
    let parameterRequestWaiters: Waiters<Void, ParameterUpdateRequestError>
    var parameterRequests: [UInt16: (identifier: UInt8, waiter: Waiters<Void, ParameterUpdateRequestError>.ID)] = [:]
    /// Links with queued fragments, in round-robin order.
    @exclusivity(unchecked) var readyLinks: [UInt16] = []

    /// Set once the transport is gone; every later call fails with it.
    @exclusivity(unchecked) public internal(set) var lostReason: String?
    /// Work with no caller waiting (HCIHost+Background.swift), by id: started from any actor
    /// of the adapter, so confined to its queue rather than to this actor.
    nonisolated let backgroundRegistry: QueueConfined<BackgroundTasks>
    /// Decides on a peripheral's Connection Parameter Update Request (handle, requested range);
    /// nil accepts every valid request.
    var parameterUpdatePolicy: (@Sendable (UInt16, ConnectionParameterRange) -> Bool)?
    /// Limits against misbehaving peers and controllers, and their counters (HostSafeguards.swift).
    @exclusivity(unchecked) var safeguards = HostSafeguards()

    public init(transport: any HCITransport, executor: AdapterExecutor, scheduler: (any TimerScheduler)? = nil, logger: BLELogger = .silent) {
        self.transport = transport
        self.executor = executor
        self.scheduler = scheduler ?? DispatchTimerScheduler(queue: executor.queue)
        self.logger = logger
        self.inlet = ACLInlet(queue: executor.queue)
        self.backgroundRegistry = QueueConfined(BackgroundTasks(), on: executor.queue)
        self.commandWaiters = Waiters(executor: executor, scheduler: self.scheduler)
        self.sendWaiters = Waiters(executor: executor, scheduler: self.scheduler)
        self.channelRequestWaiters = Waiters(executor: executor, scheduler: self.scheduler)
        self.parameterRequestWaiters = Waiters(executor: executor, scheduler: self.scheduler)
    }

    deinit {
        inlet.isOpen.store(false, ordering: .relaxed)
    }

    /// Starts reading from the transport. Packets are handled on the adapter queue as they arrive.
    public func start() throws(TransportError) {
        let inlet = self.inlet
        transport.setACLReceiver { raw in inlet.deliverRawPDU(raw) }
        try transport.start(on: executor.queue) { [weak self] event in
            if case .packet(.acl(let packet)) = event {
                let leftover = inlet.receive(packet)
                if case .none = leftover { return }
                self?.receiveOnQueue(leftover)
                return
            }
            self?.receiveOnQueue(event)
        }
    }

    /// What the inlet left of an ACL packet, handled on the host (see `receiveOnQueue(_:)`).
    nonisolated func receiveOnQueue(_ leftover: ACLInlet.Leftover) {
        runIsolated(leftover) { host, leftover in host.handleLeftover(leftover) }
    }

    /// The per-packet entry from the transport callback, on the adapter queue: through a
    /// function value that captures nothing, so a packet costs no heap allocation here (the
    /// capturing closure that `enter` converts cost two).
    nonisolated func receiveOnQueue(_ event: TransportEvent) {
        runIsolated(event) { host, event in host.handleTransport(event) }
    }

    /// Adds an observer of events the host does not consume (all but Command Complete/Status
    /// for its own commands and Number Of Completed Packets). Called on the executor.
    public func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) {
        eventHandlers.append(handler)
    }

    /// Sets the reader of LE Advertising Report events in place (see `advertisingReportReader`).
    func setAdvertisingReportReader(_ reader: @escaping (UnsafeRawBufferPointer) -> Bool) {
        advertisingReportReader = reader
    }

    public func setLogger(_ logger: BLELogger) { self.logger = logger }

    /// After the transport was lost or closed: starts it again with fresh command and link
    /// state. Only a transport that opens its endpoint anew on every `start` can do this (the
    /// one of `Central(opening:)`, `Central(device:)` and `Central.open`); others throw `.closed`.
    func restart() throws(TransportError) {
        guard lostReason != nil else { return }
        links.removeAll()
        readyLinks.removeAll()
        safeguards.foreignHandles.removeAll()
        for handle in Array(flow.inFlight.keys) { apply(flow.handle(.linkClosed(handle: handle))) }
        apply(flow.handle(.commandsReset))
        unansweredResets = 0
        ownResetCompleted = false
        releaseLateAnswerHolds()
        try start()
        lostReason = nil
    }

    /// Closes the transport and fails everything pending.
    public func close() {
        transport.close()
        transportLost("closed by the host", level: .info)
    }

    // MARK: - Transport input

    func handleTransport(_ event: TransportEvent) {
        switch event {
        case .packet(let packet):
            handle(packet)
        case .closed(let error):
            if let error { transportLost("\(error)") } else { transportLost("the transport reached its end", level: .info) }
        }
    }

    func handle(_ packet: HCIPacket) {
        switch packet {
        case .event(let raw):
            if raw.code == HCIEvent.Code.leMeta, raw.parameters.first == HCIEvent.LESubevent.advertisingReport,
               eventHandlers.count == 1, let read = advertisingReportReader,
               raw.parameters.withUnsafeBytes({ read($0) }) { return }
            let event: HCIEvent
            do {
                event = try HCIEvent(raw)
            } catch {
                undecodableEvents += 1
                logLimited(.undecodableEvent, .warning, "dropping undecodable event \(raw.code.hex) [\(raw.parameters.hexString())]: \(error)")
                return
            }
            handle(event)
        case .acl(let acl):
            handleLeftover(inlet.receive(acl))
        case .command, .sco, .iso:
            logger.log(.debug, "ignoring \(packet.type) packet from the controller (\(packet.body.count) bytes)")
        }
    }

    func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete(let e):
            _ = flow.handle(.commandCreditsReported(e.numHCICommandPackets))
            if e.opcode.rawValue != 0 { completeCommand(e.opcode, .success(e.returnParameters)) }
            pumpCommands()
        case .commandStatus(let e):
            _ = flow.handle(.commandCreditsReported(e.numHCICommandPackets))
            if e.opcode.rawValue != 0 {
                completeCommand(e.opcode, e.status == .success ? .success([]) : .failure(.commandFailed(opcode: e.opcode, status: e.status)))
            }
            pumpCommands()
        case .numberOfCompletedPackets(let entries):
            for entry in entries { apply(flow.handle(.completedPackets(handle: entry.handle, count: Int(entry.count)))) }
            pumpACL()
        case .leConnectionUpdateComplete(let e):
            parameterUpdateCompleted(handle: e.handle)
            deliver(event)
        case .disconnectionComplete(let e):
            if e.status == .success { linkDisconnected(handle: e.handle, reason: e.reason) }
            deliver(event)
        case .hardwareError(let code):
            logger.log(.error, "controller hardware error \(code.hex)")
            failAllCommands(.hardwareError(code: code))
            clearControllerState(hardwareError: code)
            deliver(event)
        default:
            deliver(event)
        }
    }

    /// The controller lost its state (a Hardware Error, or HCI_Reset about to go out): every
    /// link ends here (its queued PDUs and channels fail with `LinkError.controllerReset`)
    /// and every ACL buffer is free again.
    func clearControllerState(hardwareError code: UInt8?) {
        allLinksLost { .controllerReset(peer: $0.peer.address, hardwareError: code) }
        safeguards.foreignHandles.removeAll()
    }

    func deliver(_ event: HCIEvent) {
        for handler in eventHandlers { handler(.event(event)) }
    }

    func transportLost(_ why: String, level: LogLevel = .error) {
        guard lostReason == nil else { return }
        lostReason = why
        logger.log(level, "transport \(transport.name) lost: \(why)", metadata: ["event": "transportLost"])
        failAllCommands(.transportLost(why))
        for handle in Array(links.keys) { linkLost(handle: handle, error: .transportLost(why)) }
        for handler in eventHandlers { handler(.transportLost(why)) }
    }
}
