import Dispatch
import BLEWire

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
    /// (its file descriptor closed), at once if it already is. A descriptor with a reader
    /// thread is closed only once that thread has stopped polling it, a turn of the queue
    /// later at the earliest; opening the same adapter again before that can fail with EBUSY.
    ///
    ///     transport.close(); transport.whenReleased { reopen() }
    func whenReleased(_ completion: @escaping @Sendable () -> Void)
    /// Installs `receiver`, offered the raw bytes of every ACL data packet the transport reads
    /// (the 4-octet header and the data, Vol 4, Part E, 5.4.2) before a packet value is built
    /// from them: when it returns true the packet is consumed and no `.packet` event follows
    /// for it. It runs on the start queue, in order with the events; the bytes are valid only
    /// during the call. Set before `start`. Transports that do not read raw bytes ignore it.
    ///
    ///     transport.setACLReceiver { raw in inlet.take(raw) }
    func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool)
}

extension HCITransport {
    /// Transports that hand over packet values (memory, replay, wrappers that must see every
    /// packet) ignore the raw receiver: every packet arrives as an event.
    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {}

    /// Transports that release everything within `close()`.
    public func whenReleased(_ completion: @escaping @Sendable () -> Void) { completion() }
}
