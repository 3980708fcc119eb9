import Dispatch
import BLEWire

/// One end of an in-memory HCI link: packets sent on one end arrive at the other, in order.
/// Used by tests and by the in-process virtual controller.
///
/// Hand-over without locks: each end owns an inbox, a serial queue created inactive. `start(on:)`
/// targets the inbox at the start queue and activates it. `send` on one end enqueues an async
/// block on the other end's inbox; the block runs on the receiver's start queue and is the
/// only code that touches the receiver's state. Packets sent before the receiver starts wait
/// in the inactive inbox, in order. Each end's own state is touched only on its own queue.
///
///     let (host, controller) = MemoryTransport.pair()
///     try controller.start(on: controllerQueue) { event in ... }
///     try host.start(on: hostQueue) { event in ... }
public final class MemoryTransport: HCITransport, @unchecked Sendable { // state touched only on the start queue; see the hand-over note
    public let name: String
    /// Runs blocks addressed to this end; targets the start queue once started.
    private let inbox: DispatchQueue
    /// The other end's inbox (strong: blocks sent after the other end is gone run harmlessly).
    private let peerInbox: DispatchQueue
    /// Set once in `pair()` before either end is shared.
    private weak var peer: MemoryTransport?
    private var handler: (@Sendable (TransportEvent) -> Void)?
    private var state: State = .idle
    private var inboxActive = false

    private enum State { case idle, open, closed }

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
        host.peer = controller
        controller.peer = host
        return (host, controller)
    }

    deinit {
        // Releasing an inactive dispatch queue is an error; let queued blocks run (they find no receiver).
        if !inboxActive { inbox.activate() }
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard state == .idle else { throw .closed(endpoint: name) }
        self.handler = handler
        state = .open
        inbox.setTarget(queue: queue)
        inboxActive = true
        inbox.activate()
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard state == .open else { throw .closed(endpoint: name) }
        peerInbox.async { [weak receiver = peer] in receiver?.receive(packet) }
    }

    public func close() {
        guard state != .closed else { return }
        let wasOpen = state == .open
        state = .closed
        handler = nil
        if wasOpen { peerInbox.async { [weak receiver = peer] in receiver?.peerClosed() } }
    }

    /// Runs on this end's start queue (via the inbox).
    private func receive(_ packet: HCIPacket) {
        guard state == .open else { return }
        handler?(.packet(packet))
    }

    private func peerClosed() {
        guard state == .open, let handler else { return }
        state = .closed
        self.handler = nil
        handler(.closed(.lost(endpoint: name, reason: "the other end of the in-memory link closed")))
    }
}
