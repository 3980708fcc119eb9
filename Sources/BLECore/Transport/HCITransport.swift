import Dispatch

/// What a transport reports to the stack, always on the queue it was started on.
public enum TransportEvent: Sendable {
    case packet(HCIPacket)
    /// The transport stopped: nil after `close()`, an error when it was lost.
    case closed(TransportError?)
}

/// A channel that carries HCI packets between this host and one controller.
///
/// A transport is started on the adapter's serial queue and reports every packet on that
/// queue, in order, so the stack handles it synchronously there (no hop, no lock).
/// `send` and `close` are called only on that queue after `start`.
///
///     let t = try TransportSpec.parse("tcp:127.0.0.1:9000").open()
///     try t.start(on: queue) { event in ... }
public protocol HCITransport: AnyObject, Sendable {
    /// Short text naming the endpoint, for logs ("tcp:127.0.0.1:9000").
    var name: String { get }
    /// Starts reading. `handler` runs on `queue` for every packet and once for the close.
    func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError)
    /// Writes one packet. Called on the start queue.
    func send(_ packet: HCIPacket) throws(TransportError)
    /// Stops reading and releases the endpoint; no events follow. Idempotent.
    func close()
    /// After `close()`: runs `completion` on the start queue once the endpoint is released
    /// (its file descriptor closed), at once if it already is. A descriptor watched by
    /// dispatch sources is closed only after their cancellation, a turn of the queue later;
    /// opening the same adapter again before that can fail with EBUSY.
    ///
    ///     transport.close(); transport.whenReleased { reopen() }
    func whenReleased(_ completion: @escaping @Sendable () -> Void)
}

extension HCITransport {
    /// Transports that release everything within `close()`.
    public func whenReleased(_ completion: @escaping @Sendable () -> Void) { completion() }
}
