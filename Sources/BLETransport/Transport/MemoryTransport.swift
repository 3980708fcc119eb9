import Dispatch
import Synchronization
import BLEWire

/// One end of an in-memory HCI link: packets sent on one end arrive at the other, in order.
/// Used by tests and by the in-process virtual controller.
///
/// Hand-over without locks: each end owns an inbox, a serial queue created inactive. `start(on:)`
/// targets the inbox at the start queue, makes the end's state there (confined to the start
/// queue) and activates the inbox. `send` on one end enqueues an async block on the other
/// end's inbox; the block runs on the receiver's start queue and is the only code that touches
/// the receiver's state. Packets sent before the receiver starts wait in the inactive inbox,
/// in order. `send` and `close` come on the end's own start queue.
///
///     let (host, controller) = MemoryTransport.pair()
///     try controller.start(on: controllerQueue) { event in ... }
///     try host.start(on: hostQueue) { event in ... }
public final class MemoryTransport: HCITransport, Sendable {
    public let name: String
    /// Runs blocks addressed to this end; targets the start queue once started.
    private let inbox: DispatchQueue
    /// The other end's inbox (strong: blocks sent after the other end is gone run harmlessly).
    private let peerInbox: DispatchQueue
    /// The other end, set once in `pair()` before either end is shared.
    private let peer = AtomicLazyReference<Peer>()
    /// This end's state on its start queue; made by `start`, which then activates the inbox.
    private let run = AtomicLazyReference<QueueConfined<Run>>()
    /// `close()` came before `start`: the end never opens.
    private let closedBeforeStart = Atomic<Bool>(false)

    /// A weak reference to the other end (the two ends do not keep each other alive).
    private final class Peer: Sendable {
        weak let end: MemoryTransport?
        init(_ end: MemoryTransport) { self.end = end }
    }

    private struct Run {
        var handler: (@Sendable (TransportEvent) -> Void)?
        var isOpen = true
    }

    private init(name: String, inbox: DispatchQueue, peerInbox: DispatchQueue) {
        self.name = name
        self.inbox = inbox
        self.peerInbox = peerInbox
    }

    /// A connected pair: what `host` sends, `controller` receives, and back.
    public static func pair(name: String = "memory") -> (host: MemoryTransport, controller: MemoryTransport) {
        let hostInbox = DispatchQueue(label: "ble.memory.\(name).host", attributes: .initiallyInactive)
        let controllerInbox = DispatchQueue(label: "ble.memory.\(name).controller", attributes: .initiallyInactive)
        let host = MemoryTransport(name: "\(name):host", inbox: hostInbox, peerInbox: controllerInbox)
        let controller = MemoryTransport(name: "\(name):controller", inbox: controllerInbox, peerInbox: hostInbox)
        _ = host.peer.storeIfNil(Peer(controller))
        _ = controller.peer.storeIfNil(Peer(host))
        return (host, controller)
    }

    deinit {
        // Releasing an inactive dispatch queue is an error; let queued blocks run (they find no
        // receiver). A started end activated its inbox.
        if run.load() == nil { inbox.activate() }
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard !closedBeforeStart.load(ordering: .acquiring) else { throw .closed(endpoint: name) }
        let started = QueueConfined(Run(handler: handler), on: queue)
        guard run.storeIfNil(started) === started else { throw .closed(endpoint: name) }
        inbox.setTarget(queue: queue)
        inbox.activate()
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard let run = run.load(), run.value.isOpen else { throw .closed(endpoint: name) }
        let peer = self.peer.load()
        peerInbox.async { peer?.end?.receive(packet) }
    }

    public func close() {
        guard let run = run.load() else {
            closedBeforeStart.store(true, ordering: .releasing)
            return
        }
        guard run.value.isOpen else { return }
        run.value.isOpen = false
        run.value.handler = nil
        let peer = self.peer.load()
        peerInbox.async { peer?.end?.peerClosed() }
    }

    /// Runs on this end's start queue (via the inbox).
    private func receive(_ packet: HCIPacket) {
        guard let run = run.load(), run.value.isOpen else { return }
        let handler = run.value.handler
        handler?(.packet(packet))
    }

    private func peerClosed() {
        guard let run = run.load(), run.value.isOpen, let handler = run.value.handler else { return }
        run.value.isOpen = false
        run.value.handler = nil
        handler(.closed(.lost(endpoint: name, reason: "the other end of the in-memory link closed")))
    }
}
