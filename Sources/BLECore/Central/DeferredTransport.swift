import Dispatch
import BLEWire
import BLETransport

/// A transport that opens its endpoint when it is started, and opens it anew on every later
/// start: `Central.reopen` can open an adapter again after it went away, and `Central()`
/// (module BLESeed) can be created without `try` and report a failure to open through its
/// state.
package final class DeferredTransport: HCITransport, @unchecked Sendable { // `first`, `inner` and `receiver` are touched only on the start queue (HCITransport contract)
    package let name: String
    private let open: @Sendable () throws(TransportError) -> any HCITransport
    /// Already opened by the caller: used by the first start instead of opening.
    private var first: (any HCITransport)?
    private var inner: (any HCITransport)?
    private var receiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?

    package init(spec: String) {
        name = spec
        open = { () throws(TransportError) in try TransportSpec.parse(spec).open() }
    }

    init(name: String, first: (any HCITransport)? = nil, open: @escaping @Sendable () throws(TransportError) -> any HCITransport) {
        self.name = name
        self.first = first
        self.open = open
    }

    package func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let transport: any HCITransport
        if let first {
            self.first = nil
            transport = first
        } else {
            transport = try open()
        }
        inner?.close()
        inner = nil
        if let receiver { transport.setACLReceiver(receiver) }
        do {
            try transport.start(on: queue, handler: handler)
        } catch {
            transport.close()
            throw error
        }
        inner = transport
    }

    package func send(_ packet: HCIPacket) throws(TransportError) {
        guard let inner else { throw .closed(endpoint: name) }
        try inner.send(packet)
    }

    package func close() {
        inner?.close()
        first?.close()
        first = nil
    }

    package func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let inner { inner.whenReleased(completion) } else { completion() }
    }

    package func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        self.receiver = receiver
    }
}
