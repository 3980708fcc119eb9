import Dispatch
import Synchronization
import BLEWire

/// One end of an in-memory HCI link: packets sent on one end arrive at the other, in order.
/// Used by tests and by the in-process virtual controller.
///
/// Hand-over without locks: each end owns an inbox, a serial queue created inactive. `start(on:)`
/// makes the end's state, confined to the start queue, publishes it once (an atomic
/// reference), then targets the inbox at the start queue and activates it. `send` on one end
/// enqueues an async block on the other end's inbox; the block runs on the receiver's start
/// queue and is the only code there that touches the receiver's state. Packets sent before the
/// receiver starts wait in the inactive inbox, in order.
///
///     let (host, controller) = MemoryTransport.pair()
///     try controller.start(on: controllerQueue) { event in ... }
///     try host.start(on: hostQueue) { event in ... }
public final class MemoryTransport: HCITransport, Sendable {
    public let name: String
    /// Blocks addressed to this end run here.
    private let inbox: Inbox
    /// The other end's inbox (strong: blocks sent after the other end is gone run harmlessly).
    private let peerInbox: Inbox

    /// One end's receiving side: its queue (targets the start queue once started) and the
    /// end's state there.
    private final class Inbox: Sendable {
        let name: String
        let queue: DispatchQueue
        /// Set once, by `start`, before the queue is activated.
        let end = AtomicLazyReference<QueueConfined<End>>()
        /// `close()` came before `start`: the end never opens.
        let closedBeforeStart = Atomic<Bool>(false)
        /// The end's transport is gone: what still arrives finds no receiver.
        let released = Atomic<Bool>(false)

        init(name: String, label: String) {
            self.name = name
            queue = DispatchQueue(label: label, attributes: .initiallyInactive)
        }

        deinit {
            // Releasing an inactive dispatch queue is an error; let queued blocks run (they find no receiver).
            if end.load() == nil { queue.activate() }
        }

        /// The end's state when it is there to receive (on the start queue, via the inbox).
        private var receiver: QueueConfined<End>? {
            guard !released.load(ordering: .relaxed), let end = end.load(), end.value.isOpen else { return nil }
            return end
        }

        func receive(_ packet: HCIPacket) {
            guard let end = receiver else { return }
            let handler = end.value.handler
            handler?(.packet(packet))
        }

        func peerClosed() {
            guard let end = receiver, let handler = end.value.handler else { return }
            end.value.isOpen = false
            end.value.handler = nil
            handler(.closed(.lost(endpoint: name, reason: "the other end of the in-memory link closed")))
        }
    }

    /// One end's state on its start queue.
    private struct End {
        var handler: (@Sendable (TransportEvent) -> Void)?
        var isOpen = true
    }

    private init(name: String, inbox: Inbox, peerInbox: Inbox) {
        self.name = name
        self.inbox = inbox
        self.peerInbox = peerInbox
    }

    /// A connected pair: what `host` sends, `controller` receives, and back.
    public static func pair(name: String = "memory") -> (host: MemoryTransport, controller: MemoryTransport) {
        let hostInbox = Inbox(name: "\(name):host", label: "ble.memory.\(name).host")
        let controllerInbox = Inbox(name: "\(name):controller", label: "ble.memory.\(name).controller")
        let host = MemoryTransport(name: hostInbox.name, inbox: hostInbox, peerInbox: controllerInbox)
        let controller = MemoryTransport(name: controllerInbox.name, inbox: controllerInbox, peerInbox: hostInbox)
        return (host, controller)
    }

    deinit {
        inbox.released.store(true, ordering: .relaxed)
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard !inbox.closedBeforeStart.load(ordering: .acquiring) else { throw .closed(endpoint: name) }
        let end = QueueConfined(End(handler: handler), on: queue)
        guard inbox.end.storeIfNil(end) === end else { throw .closed(endpoint: name) }
        inbox.queue.setTarget(queue: queue)
        inbox.queue.activate()
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard let end = inbox.end.load(), end.value.isOpen else { throw .closed(endpoint: name) }
        peerInbox.queue.async { [peerInbox] in peerInbox.receive(packet) }
    }

    public func close() {
        guard let end = inbox.end.load() else {
            inbox.closedBeforeStart.store(true, ordering: .releasing)
            return
        }
        guard end.value.isOpen else { return }
        end.value.isOpen = false
        end.value.handler = nil
        peerInbox.queue.async { [peerInbox] in peerInbox.peerClosed() }
    }
}
