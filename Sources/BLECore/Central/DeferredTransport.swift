import Dispatch
import Synchronization
import BLEWire
import BLETransport

/// A transport that opens its endpoint when it is started, and opens it anew on every later
/// start: `Central.reopen` can open an adapter again after it went away, and `Central()`
/// (module BLESeed) can be created without `try` and report a failure to open through its
/// state.
///
/// Every start comes on the same queue (the adapter's), and `send`, `close` and
/// `whenReleased` come there too (HCITransport contract): the open endpoint is confined to
/// that queue from the first start on. What comes before the queue is known (the endpoint
/// the caller opened already, the raw receiver) waits behind a lock, on the control path.
package final class DeferredTransport: HCITransport {
    package let name: String
    private let open: @Sendable () throws(TransportError) -> any HCITransport
    /// What the next start takes up: set at creation and by `setACLReceiver`, before the start queue is known.
    private let setup: Mutex<Setup>
    /// The open endpoint, confined to the start queue; made by the first start.
    private let running = AtomicLazyReference<QueueConfined<Running>>()

    private struct Setup {
        /// Already opened by the caller: used by the first start instead of opening.
        var first: (any HCITransport)?
        var receiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    }

    private struct Running {
        var inner: (any HCITransport)?
    }

    package init(spec: String) {
        name = spec
        open = { () throws(TransportError) in try TransportSpec.parse(spec).open() }
        setup = Mutex(Setup())
    }

    init(name: String, first: (any HCITransport)? = nil, open: @escaping @Sendable () throws(TransportError) -> any HCITransport) {
        self.name = name
        self.setup = Mutex(Setup(first: first))
        self.open = open
    }

    package func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let running = self.running.storeIfNil(QueueConfined(Running(), on: queue))
        let (first, receiver) = setup.withLock { setup in
            defer { setup.first = nil }
            return (setup.first, setup.receiver)
        }
        let transport: any HCITransport
        if let first {
            transport = first
        } else {
            transport = try open()
        }
        let previous = running.value.inner
        running.value.inner = nil
        previous?.close()
        if let receiver { transport.setACLReceiver(receiver) }
        do {
            try transport.start(on: queue, handler: handler)
        } catch {
            transport.close()
            throw error
        }
        running.value.inner = transport
    }

    package func send(_ packet: HCIPacket) throws(TransportError) {
        guard let inner = running.load()?.value.inner else { throw .closed(endpoint: name) }
        try inner.send(packet)
    }

    package func close() {
        let inner = running.load()?.value.inner
        inner?.close()
        let first = setup.withLock { setup in
            defer { setup.first = nil }
            return setup.first
        }
        first?.close()
    }

    package func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let inner = running.load()?.value.inner { inner.whenReleased(completion) } else { completion() }
    }

    package func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        setup.withLock { $0.receiver = receiver }
    }
}
