#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import BLEWire

/// The lifecycle both file-descriptor transports share (`HCISocketTransport`,
/// `StreamTransport`): idle, then open, then closed; the event handler and the ACL receiver;
/// the `DispatchFD` serving the descriptor; and the one place a failure ends the transport
/// and is reported, once. The transports keep only how they read and frame.
///
/// Used on the queue given to `start` (and at init and deinit of its owner).
final class FDTransportLifecycle: @unchecked Sendable { // touched only on the start queue
    let fd: Int32
    let name: String
    private(set) var io: DispatchFD?
    private var handler: (@Sendable (TransportEvent) -> Void)?
    /// Takes ACL bodies before they become packets (see `HCITransport.setACLReceiver`).
    var aclReceiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    private var state: State = .idle
    /// Reports errors the read source never sees (see `SocketErrorWatch`); sockets that need it.
    private var errorWatch: SocketErrorWatch?

    private enum State { case idle, open, closed }

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit {
        if let io {
            io.queue.async { io.cancel() }
        } else if state == .idle {
            _ = Glibc.close(fd)
        }
    }

    var isOpen: Bool { state == .open }
    /// Not started and not closed.
    var isIdle: Bool { state == .idle }

    /// Serves the descriptor on `queue`: `onReadable` runs when bytes are ready; a queued
    /// write that fails ends the transport with `lostOnWrite(errno)`.
    func start(on queue: DispatchQueue, packetMode: Bool, isSocket: Bool,
               handler: @escaping @Sendable (TransportEvent) -> Void,
               onReadable: @escaping @Sendable () -> Void,
               lostOnWrite: @escaping @Sendable (Int32) -> TransportError) throws(TransportError) {
        guard state == .idle else { throw .closed(endpoint: name) }
        self.handler = handler
        state = .open
        let io = DispatchFD(fd: fd, queue: queue, packetMode: packetMode, isSocket: isSocket)
        self.io = io
        do {
            try io.start(onReadable: onReadable, onWriteError: { [weak self] err in self?.fail(lostOnWrite(err)) })
        } catch {
            close()
            throw .system(operation: error.operation, endpoint: name, errno: error.errno)
        }
    }

    /// After `start`: ends the transport with `lost(errno)` when the socket reports an error
    /// that no read reveals (an HCI socket whose adapter was unregistered).
    func watchErrors(lost: @escaping @Sendable (Int32) -> TransportError) {
        guard state == .open, let io else { return }
        errorWatch = SocketErrorWatch(fd: fd, queue: io.queue) { [weak self] err in self?.fail(lost(err)) }
    }

    /// Writes one packet; a failed write throws `lost(errno)` and ends the transport.
    func send(_ packet: HCIPacket, lost: (Int32) -> TransportError) throws(TransportError) {
        guard state == .open, let io else { throw .closed(endpoint: name) }
        if let err = io.write(packet.h4) {
            let error = lost(err)
            state = .closed
            io.queue.async { [weak self] in self?.fail(error) }
            throw error
        }
    }

    /// Hands a received packet to the handler.
    @inline(__always)
    func deliver(_ packet: HCIPacket) { handler?(.packet(packet)) }

    /// Closes without reporting (the owner asked). Idempotent.
    func close() {
        guard state != .closed else { return }
        state = .closed
        handler = nil
        errorWatch?.cancel()
        errorWatch = nil
        if let io { io.cancel() } else { _ = Glibc.close(fd) }
    }

    /// Runs `completion` once the descriptor is closed.
    func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let io { io.whenClosed(completion) } else { completion() }
    }

    /// Ends the transport and reports why, once.
    func fail(_ error: TransportError) {
        guard state != .closed || handler != nil else { return }
        let handler = self.handler
        state = .closed
        self.handler = nil
        errorWatch?.cancel()
        errorWatch = nil
        io?.cancel()
        handler?(.closed(error))
    }
}
