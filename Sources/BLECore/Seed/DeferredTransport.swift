import Dispatch

/// A transport opened from its spec string only when the central starts it, so that
/// `Central()` can be created without `try` and report a failure to open through its state.
final class DeferredTransport: HCITransport, @unchecked Sendable { // `inner` and `receiver` are touched only on the start queue (HCITransport contract)
    let name: String
    private var inner: (any HCITransport)?
    private var receiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?

    init(spec: String) { name = spec }

    func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let transport = try TransportSpec.parse(name).open()
        if let receiver { transport.setACLReceiver(receiver) }
        try transport.start(on: queue, handler: handler)
        inner = transport
    }

    func send(_ packet: HCIPacket) throws(TransportError) {
        guard let inner else { throw .closed(endpoint: name) }
        try inner.send(packet)
    }

    func close() { inner?.close() }

    func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let inner { inner.whenReleased(completion) } else { completion() }
    }

    func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        self.receiver = receiver
    }
}
