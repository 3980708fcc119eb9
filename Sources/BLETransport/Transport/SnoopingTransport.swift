import Dispatch
import BLEWire

/// A tee: passes everything through to another transport and records every packet, both
/// ways, to a btsnoop capture (opens in `btmon -r` and Wireshark), in the order the stack
/// saw them, including ACL packets the host took through the raw receiver.
///
///     let t = try SnoopingTransport(wrapping: TransportSpec.parse("hci0").open(), path: "/tmp/session.btsnoop")
public final class SnoopingTransport: HCITransport {
    public let inner: any HCITransport
    public let writer: BTSnoopWriter
    public var name: String { inner.name }

    /// Records to `writer`, which this transport owns and closes on `close()`.
    public init(wrapping inner: any HCITransport, writer: BTSnoopWriter) {
        self.inner = inner
        self.writer = writer
    }

    /// Creates (truncates) the capture at `path`; the writer's warnings (records dropped
    /// behind a slow disk, a failed write) go to `logger`.
    public convenience init(wrapping inner: any HCITransport, path: String,
                            logger: BLELogger = .standardError(label: "btsnoop")) throws(TransportError) {
        self.init(wrapping: inner, writer: try BTSnoopWriter(path: path, logger: logger))
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let writer = self.writer
        try inner.start(on: queue) { event in
            if case .packet(let packet) = event { writer.write(packet, direction: .received) }
            handler(event)
        }
    }

    /// Records the packet once the inner transport accepted it.
    public func send(_ packet: HCIPacket) throws(TransportError) {
        try inner.send(packet)
        writer.write(packet, direction: .sent)
    }

    /// Passes the raw ACL path through: a packet the receiver takes is recorded then (it
    /// becomes no event); one it leaves is recorded as its event passes.
    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        let writer = self.writer
        inner.setACLReceiver { raw in
            guard receiver(raw) else { return false }
            writer.write(H4Framer.packet(type: .acl, body: raw), direction: .received)
            return true
        }
    }

    public func close() {
        inner.close()
        writer.close()
    }

    public func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        inner.whenReleased(completion)
    }
}
