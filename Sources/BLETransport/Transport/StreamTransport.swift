#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import BLEWire

/// H4 over a connected byte stream (Core Spec Vol 4, Part A): a TCP or unix socket to an
/// emulator or controller bridge, a UART, or a pseudo-terminal another program attaches to.
///
/// Reads are framed by `H4Framer` straight from one reusable buffer; writes go through a
/// non-blocking outgoing queue. End of stream and read errors end the transport with
/// `.closed(.lost(...))`.
///
///     let t = try StreamTransport.connect(host: "127.0.0.1", port: 9000)
///     try t.start(on: executor.queue) { event in ... }
public final class StreamTransport: HCITransport, Sendable {
    public let name: String
    /// For `pty`: the slave path another program opens (`btattach -B /dev/pts/5 -P h4`).
    public let ptyPath: String?
    private let fd: Int32
    private let isSocket: Bool
    /// For `pty`: the slave end held open so the pty survives the other program re-attaching.
    private let ptySlaveFD: Int32
    private let life: FDTransportLifecycle

    /// What the reading code owns on the start queue: the framer and its buffer.
    private struct Reading {
        var framer: H4Framer
        let buffer: ReadBuffer
    }

    /// Read buffer size: a few maximum-size packets per read system call.
    static let readBufferSize = 64 * 1024

    init(fd: Int32, name: String, isSocket: Bool, ptyPath: String? = nil, ptySlaveFD: Int32 = -1) {
        self.fd = fd
        self.name = name
        self.isSocket = isSocket
        self.ptyPath = ptyPath
        self.ptySlaveFD = ptySlaveFD
        life = FDTransportLifecycle(fd: fd, name: name)
    }

    deinit {
        if ptySlaveFD >= 0 { _ = Glibc.close(ptySlaveFD) }
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard life.isIdle else { throw .closed(endpoint: name) }
        if let err = DispatchFD.setNonBlocking(fd) {
            throw .system(operation: "fcntl(O_NONBLOCK)", endpoint: name, errno: err)
        }
        let name = self.name
        let reading = QueueConfined(Reading(framer: H4Framer(endpoint: name), buffer: ReadBuffer(byteCount: Self.readBufferSize)), on: queue)
        try life.start(on: queue, packetMode: false, isSocket: isSocket, handler: handler,
                       onReadable: { [weak self] in self?.readAvailable(reading) },
                       lostOnWrite: { .lost(endpoint: name, reason: "write failed: \(errnoName($0))") })
    }

    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        life.setACLReceiver(receiver)
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        try life.send(packet) { .lost(endpoint: name, reason: "write failed: \(errnoName($0))") }
    }

    /// Bytes accepted by `send` that the kernel has not taken yet.
    public var pendingOutputBytes: Int { life.io?.pendingBytes ?? 0 }

    public func close() { life.close() }

    public func whenReleased(_ completion: @escaping @Sendable () -> Void) { life.whenReleased(completion) }

    /// Reads until the kernel has nothing more (EAGAIN), framing packets as they complete.
    private func readAvailable(_ reading: QueueConfined<Reading>) {
        guard let running = life.running else { return }
        let readBuffer = reading.value.buffer.bytes
        while life.isOpen {
            let n = read(fd, readBuffer.baseAddress, readBuffer.count)
            if n > 0 {
                do {
                    // Not `??`: through its generic signature the closure was reabstracted
                    // (two thunks on every ACL packet).
                    let acl: @Sendable (UnsafeRawBufferPointer) -> Bool
                    if let receiver = running.aclReceiver { acl = receiver } else { acl = { _ in false } }
                    try reading.value.framer.feed(UnsafeRawBufferPointer(rebasing: readBuffer[..<n]), acl: { life.isOpen && acl($0) }) { packet in
                        if life.isOpen { running.deliver(packet) }
                    }
                } catch {
                    life.fail(error)
                    return
                }
                if n < readBuffer.count { return }
            } else if n == 0 {
                do {
                    try reading.value.framer.finish()
                    life.fail(.lost(endpoint: name, reason: "the other end closed the stream (end of file)"))
                } catch {
                    life.fail(error)
                }
                return
            } else {
                let err = errno
                if err == EINTR { continue }
                if err == EAGAIN || err == EWOULDBLOCK { return }
                // A pty master reads EIO once every slave fd is closed; ours stays open, so EIO is real.
                life.fail(.lost(endpoint: name, reason: "read failed: \(errnoName(err))"))
                return
            }
        }
    }
}
