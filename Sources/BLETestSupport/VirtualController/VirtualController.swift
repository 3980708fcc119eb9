import Dispatch
import BLECore
import BLEWire
import BLETransport

/// An in-process LE controller for tests: it speaks HCI over a `MemoryTransport`, so the
/// whole stack above HCI (host, central, L2CAP, ATT, GATT) runs for real without a radio.
/// It answers the bring-up commands, scans simulated peripherals, connects to them, carries
/// ACL data with real buffer accounting, routes ATT to each peripheral's `SimulatedATTServer`,
/// and can be scripted to fail in the ways real controllers do.
///
/// Threading: its state is owned by the queue of `adapterExecutor` (checked in debug builds),
/// which is also its `queue`: the end of the memory link, the virtual clock's work and the
/// simulated peripherals' servers made on `queue` all run there. A `Central` built with `centralOptions()`
/// runs on that same executor, so controller and stack take turns on one thread and every run
/// is deterministic. Public methods may be called from any task (not from inside a
/// `waitUntil` condition of another controller).
///
/// Time: in `.manual` time (the default) the controller and the central share `clock`;
/// advertising events and delayed completions happen only inside `advance(by:)`, so tests
/// never sleep.
///
///     let vc = VirtualController(options: .init())
///     vc.addPeripheral(SimulatedPeripheral(address: peer, attServer: server))
///     let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
///     try await central.powerOn()
///     let link = try await central.connect(peer)
///     await vc.advance(by: .seconds(1))
public final class VirtualController: Sendable {
    /// The controller's public device address (HCI_Read_BD_ADDR).
    public let address: BluetoothAddress
    public let options: Options
    /// The executor the stack under test should run on (see `centralOptions()`).
    public let adapterExecutor: AdapterExecutor
    /// The controller's serial queue: `adapterExecutor.queue`.
    public let queue: DispatchQueue
    /// The shared virtual clock in `.manual` time; nil in `.immediate` time.
    public let clock: ManualScheduler?
    let queueKey = DispatchSpecificKey<Bool>()

    /// Everything that changes, owned by the adapter queue: the controller's own `queue`
    /// targets it, and the virtual clock runs the controller's timed work on it directly.
    let state: QueueConfined<State>

    /// A controller with `address` as its public address, on `executor` (a new one when nil).
    public init(address: BluetoothAddress = BluetoothAddress(rawValue: 0x00_1B_DC_0F_00_01), options: Options = Options(),
                executor: AdapterExecutor? = nil) {
        self.address = address
        self.options = options
        adapterExecutor = executor ?? AdapterExecutor(label: "virtual-\(address)")
        queue = adapterExecutor.queue
        clock = options.time == .manual ? ManualScheduler(queue: adapterExecutor.queue) : nil
        state = QueueConfined(State(reportedCommandCredits: options.numHCICommandPackets), on: adapterExecutor.queue)
        queue.setSpecific(key: queueKey, value: true)
    }

    /// The host end of a fresh in-memory HCI link; the controller consumes the other end.
    /// A new transport replaces the previous one (a replugged controller: links and scan are gone).
    /// The controller stays alive while the transport is open.
    ///
    ///     let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
    public func makeTransport() -> any HCITransport {
        let (host, controller) = MemoryTransport.pair(name: "virtual-\(address)")
        attach(controller)
        return host
    }

    /// Like `makeTransport`, over real H4 bytes: a unix socket pair whose host end is a
    /// `StreamTransport`, framed as a UART or TCP controller's stream is.
    ///
    ///     let central = Central(transport: try vc.makeSocketTransport(), options: vc.centralOptions())
    public func makeSocketTransport() throws(TransportError) -> any HCITransport {
        let (host, controller) = try StreamTransport.socketPair(name: "virtual-\(address)")
        attach(controller)
        return host
    }

    func attach(_ controller: any HCITransport) {
        onQueue {
            transport?.close()
            resetState()
            hostCommandAllowance = 1
            transport = controller
            do {
                // Strong on purpose: the controller lives while its link is open, even when the
                // test keeps only the transport; closing either end breaks the cycle.
                try controller.start(on: queue) { event in self.handleTransport(event) }
            } catch {
                transport = nil // a fresh pair always starts; nothing to recover
            }
        }
    }

    /// `base` with the executor and, in `.manual` time, the scheduler of this controller, so
    /// the central's timeouts and backoffs run on the virtual clock.
    public func centralOptions(_ base: Central.Options = Central.Options()) -> Central.Options {
        var o = base
        o.executor = adapterExecutor
        if let clock { o.scheduler = clock }
        return o
    }

    // MARK: - Time

    /// Lets everything already under way settle, moves virtual time forward by `duration`
    /// (advertising events, delayed completions and the central's timers fire in order), then
    /// settles again. In `.immediate` time it only settles.
    public func advance(by duration: Duration) async {
        await settle()
        if let clock { await clock.advance(by: duration) }
        await settle()
    }

    /// Returns once the controller and the stack on its adapter queue have no more work in
    /// flight (no packet crossed the link during several turns of the queue), or when the
    /// calling task is cancelled.
    public func settle() async {
        for _ in 0..<1000 where !Task.isCancelled {
            let before = onQueue { activity }
            for _ in 0..<16 {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queue.async { c.resume() } }
            }
            if onQueue({ activity }) == before { return }
        }
    }

    /// Virtual time advanced so far (zero in `.immediate` time).
    public var elapsed: Duration { clock?.elapsed ?? .zero }

    // MARK: - Observability

    /// Every command packet received from the host, in order.
    public var commandsReceived: [HCICommandPacket] { onQueue { commands } }
    /// Every ACL data packet (fragment) received from the host, in order.
    public var aclReceived: [ACLDataPacket] { onQueue { aclPackets } }
    /// Every complete L2CAP frame the host sent, reassembled, in order.
    public var l2capReceived: [L2CAPFrame] { onQueue { framesReceived } }
    /// Every L2CAP frame the controller sent to the host, in order.
    public var l2capSent: [L2CAPFrame] { onQueue { framesSent } }
    /// Every event packet sent to the host, in order.
    public var eventsSent: [HCIEventPacket] { onQueue { events } }
    /// LE signaling commands (CID 0x0005) the host sent, decoded; undecodable ones are skipped.
    public var signalingReceived: [L2CAPSignalingCommand] {
        onQueue { framesReceived.filter { $0.channelID == L2CAPChannelID.leSignaling }.compactMap { try? L2CAPSignalingCommand(bytes: $0.payload) } }
    }
    /// Commands the host sent beyond the Num_HCI_Command_Packets it had been given.
    public var commandFlowControlViolations: Int { onQueue { commandFlowViolations } }
    /// ACL packets the host sent beyond the controller's free buffers, or longer than a buffer.
    public var aclFlowControlViolations: Int { onQueue { aclFlowViolations } }
    /// ATT PDUs dropped by `dropATT(for:)`.
    public var droppedATTCount: Int { onQueue { droppedATT } }
    /// Live links.
    public var connections: [VirtualConnection] {
        onQueue { links.values.sorted { $0.handle < $1.handle }.map(\.snapshot) }
    }
    /// Whether a scan (legacy or extended) is enabled.
    public var isScanning: Bool { onQueue { scan != nil } }
    /// The LE event mask the host set (recorded, not applied).
    public var hostLEEventMask: UInt64 { onQueue { leEventMask } }

    // MARK: - Queue plumbing

    var isOnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) == true || adapterExecutor.isOnQueue }

    /// Runs `body` on the queue (directly when already there: the adapter queue excludes it too).
    func onQueue<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        if isOnQueue { return try body() }
        return try queue.sync { Result { () throws(E) -> T in try body() } }.get()
    }

    /// Something observable changed: wake the waiters whose condition now holds.
    func changed() {
        activity &+= 1
        checkWaiters()
    }

    func handleTransport(_ event: TransportEvent) {
        switch event {
        case .packet(let packet):
            switch packet {
            case .command(let c): receiveCommand(c)
            case .acl(let a): receiveACL(a)
            case .event, .sco, .iso: break // a host never sends these
            }
        case .closed:
            transport = nil
            resetState()
            changed()
        }
    }

    /// Sends a packet to the host as it is.
    func send(_ packet: HCIPacket) {
        guard let transport else { return }
        do { try transport.send(packet) } catch { self.transport = nil }
        changed()
    }

    func send(_ event: HCIEvent) {
        let packet = event.packet
        events.append(packet)
        send(.event(packet))
    }

    func resetState() {
        stopScan()
        pending?.timer?.cancel()
        if let p = pending, p.scheduled { peripheral(p.peer)?.peripheralLink?.release(self) }
        pending = nil
        acceptList.removeAll()
        for link in links.values {
            link.timers.forEach { $0.cancel() }
            peripheral(link.peer)?.attServer?.linkDisconnected(link.attLink)
            peripheral(link.peer)?.peripheralLink?.release(self)
        }
        links.removeAll()
        hostACLInFlight = 0
        advertisers.removeAll()
        usedAdvertisingFamily = nil
        advertisingGeneration &+= 1
        resolvingList.removeAll()
        addressResolutionEnabled = false
        resolvablePrivateAddressTimeout = .seconds(900)
    }

    func peripheral(_ address: LEAddress) -> SimulatedPeripheral? {
        peripherals.first { $0.address == address }
    }

    /// Runs `work` after `delay` of virtual time (at once for zero or in `.immediate` time).
    @discardableResult
    func after(_ delay: Duration, _ work: @escaping @Sendable (VirtualController) -> Void) -> (any ScheduledTimer)? {
        guard let clock, delay > .zero else {
            work(self)
            return nil
        }
        // The clock runs work on the adapter queue, this controller's queue: state is safe there.
        return clock.schedule(after: delay) { [weak self] in if let self { work(self) } }
    }
}
