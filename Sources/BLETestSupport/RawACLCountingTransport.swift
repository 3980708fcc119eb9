import BLECore
import Dispatch
import Synchronization
import BLEWire
import BLETransport

/// Passes a transport through, counting the ACL packets its raw receiver took
/// (`HCITransport.setACLReceiver`): those the host read in place, without a packet value.
///
///     let transport = RawACLCountingTransport(try vc.makeSocketTransport())
public final class RawACLCountingTransport: HCITransport, Sendable {
    public let base: any HCITransport
    /// Apart from the transport, so the receiver the base holds does not hold the transport.
    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
    private let counter = Counter()

    public init(_ base: any HCITransport) { self.base = base }

    /// ACL packets taken by the raw receiver so far.
    public var taken: Int { counter.value.load(ordering: .relaxed) }
    public var name: String { base.name }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        try base.start(on: queue, handler: handler)
    }

    public func send(_ packet: HCIPacket) throws(TransportError) { try base.send(packet) }
    public func close() { base.close() }
    public func whenReleased(_ completion: @escaping @Sendable () -> Void) { base.whenReleased(completion) }

    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        let counter = self.counter
        base.setACLReceiver { raw in
            let took = receiver(raw)
            if took { counter.value.add(1, ordering: .relaxed) }
            return took
        }
    }
}
