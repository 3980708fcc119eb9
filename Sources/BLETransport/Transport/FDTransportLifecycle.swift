#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import BLEWire

/// The lifecycle both file-descriptor transports share (`HCISocketTransport`,
/// `StreamTransport`): idle, then open, then closed; the event handler and the ACL receiver;
/// the `DispatchFD` serving the descriptor; and the one place a failure ends the transport
/// and is reported, once. The transports keep only how they read and frame.
///
/// `start` may run on any thread; it makes the state the start queue owns (`Started`) and
/// publishes it once. Everything after `start` runs on that queue (HCITransport contract).
final class FDTransportLifecycle: Sendable {
    typealias ACLReceiver = @Sendable (UnsafeRawBufferPointer) -> Bool

    let fd: Int32
    let name: String
    /// idle, then open, then closed: set by `start`, a close before it, and on the start
    /// queue; read anywhere.
    private let phase = Atomic<UInt8>(Phase.idle.rawValue)
    /// Set once, by `start`.
    private let started = AtomicLazyReference<Started>()
    /// The ACL receiver given before `start`, which hands it to the started state.
    private let receiverBeforeStart = Mutex<ACLReceiver?>(nil)
    /// Reports errors the read source never sees (see `SocketErrorWatch`); sockets that need it.
    private let errorWatch = AtomicLazyReference<SocketErrorWatch>()

    private enum Phase: UInt8 { case idle, open, closed }

    /// What `start` makes: the descriptor served on the start queue, and the state there.
    final class Started: Sendable {
        let io: DispatchFD
        fileprivate let state: QueueConfined<Running>

        fileprivate init(io: DispatchFD, state: QueueConfined<Running>) {
            self.io = io
            self.state = state
        }

        /// Takes ACL bodies before they become packets (see `HCITransport.setACLReceiver`).
        var aclReceiver: ACLReceiver? { state.value.aclReceiver }

        /// Hands a received packet to the handler.
        @inline(__always)
        func deliver(_ packet: HCIPacket) {
            let handler = state.value.handler
            handler?(.packet(packet))
        }
    }

    fileprivate struct Running {
        var handler: (@Sendable (TransportEvent) -> Void)?
        var aclReceiver: ACLReceiver?
    }

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit {
        if let io = started.load()?.io {
            io.queue.async { io.cancel() }
        } else if phase.load(ordering: .acquiring) == Phase.idle.rawValue {
            _ = Glibc.close(fd)
        }
    }

    private var currentPhase: Phase { Phase(rawValue: phase.load(ordering: .relaxed)) ?? .closed }

    var isOpen: Bool { currentPhase == .open }
    /// Not started and not closed.
    var isIdle: Bool { currentPhase == .idle }
    /// The descriptor's server, once started.
    var io: DispatchFD? { started.load()?.io }
    /// The started state, for the reading code on the start queue: fetch it once per read.
    var running: Started? { started.load() }

    /// Before `start`, from any thread; after it, on the start queue.
    func setACLReceiver(_ receiver: @escaping ACLReceiver) {
        if let started = started.load() {
            started.state.value.aclReceiver = receiver
        } else {
            receiverBeforeStart.withLock { $0 = receiver }
        }
    }

    /// Serves the descriptor on `queue`: `onReadable` runs when bytes are ready; a queued
    /// write that fails ends the transport with `lostOnWrite(errno)`.
    func start(on queue: DispatchQueue, packetMode: Bool, isSocket: Bool,
               handler: @escaping @Sendable (TransportEvent) -> Void,
               onReadable: @escaping @Sendable () -> Void,
               lostOnWrite: @escaping @Sendable (Int32) -> TransportError) throws(TransportError) {
        guard phase.compareExchange(expected: Phase.idle.rawValue, desired: Phase.open.rawValue, ordering: .acquiringAndReleasing).exchanged else {
            throw .closed(endpoint: name)
        }
        let io = DispatchFD(fd: fd, queue: queue, packetMode: packetMode, isSocket: isSocket)
        let receiver = receiverBeforeStart.withLock { $0 }
        _ = started.storeIfNil(Started(io: io, state: QueueConfined(Running(handler: handler, aclReceiver: receiver), on: queue)))
        do {
            try io.start(onReadable: onReadable, onWriteError: { [weak self] err in self?.fail(lostOnWrite(err)) })
        } catch {
            // Nothing runs on the queue for it yet: the descriptor is closed there, a turn later.
            phase.store(Phase.closed.rawValue, ordering: .releasing)
            queue.async { io.cancel() }
            throw .system(operation: error.operation, endpoint: name, errno: error.errno)
        }
    }

    /// After `start`: ends the transport with `lost(errno)` when the socket reports an error
    /// that no read reveals (an HCI socket whose adapter was unregistered).
    func watchErrors(lost: @escaping @Sendable (Int32) -> TransportError) {
        guard isOpen, let io else { return }
        guard let watch = SocketErrorWatch(fd: fd, queue: io.queue, onError: { [weak self] err in self?.fail(lost(err)) }) else { return }
        _ = errorWatch.storeIfNil(watch)
    }

    /// Writes one packet; a failed write throws `lost(errno)` and ends the transport.
    func send(_ packet: HCIPacket, lost: (Int32) -> TransportError) throws(TransportError) {
        guard isOpen, let io else { throw .closed(endpoint: name) }
        if let err = io.write(packet.h4) {
            let error = lost(err)
            phase.store(Phase.closed.rawValue, ordering: .releasing)
            io.queue.async { [weak self] in self?.fail(error) }
            throw error
        }
    }

    /// Closes without reporting (the owner asked). Idempotent.
    func close() {
        guard phase.exchange(Phase.closed.rawValue, ordering: .acquiringAndReleasing) != Phase.closed.rawValue else { return }
        guard let started = started.load() else {
            _ = Glibc.close(fd)
            return
        }
        started.state.value.handler = nil
        errorWatch.load()?.cancel()
        started.io.cancel()
    }

    /// Runs `completion` once the descriptor is closed.
    func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let io { io.whenClosed(completion) } else { completion() }
    }

    /// Ends the transport and reports why, once.
    func fail(_ error: TransportError) {
        guard let started = started.load() else { return }
        let handler = started.state.value.handler
        guard currentPhase != .closed || handler != nil else { return }
        phase.store(Phase.closed.rawValue, ordering: .releasing)
        started.state.value.handler = nil
        errorWatch.load()?.cancel()
        started.io.cancel()
        handler?(.closed(error))
    }
}
