#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// H4 over a connected byte stream (Core Spec Vol 4, Part A): a TCP or unix socket to an
/// emulator or controller bridge, a UART, or a pseudo-terminal another program attaches to.
///
/// Reads are framed by `H4Framer` straight from one reusable buffer; writes go through a
/// non-blocking outgoing queue. End of stream and read errors end the transport with
/// `.closed(.lost(...))`.
///
///     let t = try StreamTransport.connect(host: "127.0.0.1", port: 9000)
///     try t.start(on: executor.queue) { event in ... }
public final class StreamTransport: HCITransport, @unchecked Sendable { // state touched only on the start queue
    public let name: String
    /// For `pty`: the slave path another program opens (`btattach -B /dev/pts/5 -P h4`).
    public let ptyPath: String?
    private let fd: Int32
    private let isSocket: Bool
    /// For `pty`: the slave end held open so the pty survives the other program re-attaching.
    private let ptySlaveFD: Int32
    private var io: DispatchFD?
    private var framer: H4Framer
    private var handler: (@Sendable (TransportEvent) -> Void)?
    private var aclReceiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    private var state: State = .idle
    private var readBuffer: UnsafeMutableRawBufferPointer

    private enum State { case idle, open, closed }

    /// Read buffer size: a few maximum-size packets per read system call.
    static let readBufferSize = 64 * 1024

    init(fd: Int32, name: String, isSocket: Bool, ptyPath: String? = nil, ptySlaveFD: Int32 = -1) {
        self.fd = fd
        self.name = name
        self.isSocket = isSocket
        self.ptyPath = ptyPath
        self.ptySlaveFD = ptySlaveFD
        framer = H4Framer(endpoint: name)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 8)
    }

    deinit {
        readBuffer.deallocate()
        if let io {
            io.queue.async { io.cancel() }
        } else if state == .idle {
            _ = Glibc.close(fd)
        }
        if ptySlaveFD >= 0 { _ = Glibc.close(ptySlaveFD) }
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard state == .idle else { throw .closed(endpoint: name) }
        if let err = DispatchFD.setNonBlocking(fd) {
            throw .system(operation: "fcntl(O_NONBLOCK)", endpoint: name, errno: err)
        }
        self.handler = handler
        state = .open
        let io = DispatchFD(fd: fd, queue: queue, packetMode: false, isSocket: isSocket)
        self.io = io
        io.start(
            onReadable: { [weak self] in self?.readAvailable() },
            onWriteError: { [weak self] err in self?.fail(.lost(endpoint: self?.name ?? "", reason: "write failed: \(errnoName(err))")) })
    }

    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        aclReceiver = receiver
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard state == .open, let io else { throw .closed(endpoint: name) }
        if let err = io.write(packet.h4) {
            let error = TransportError.lost(endpoint: name, reason: "write failed: \(errnoName(err))")
            io.queue.async { [weak self] in self?.fail(error) }
            state = .closed
            throw error
        }
    }

    /// Bytes accepted by `send` that the kernel has not taken yet.
    public var pendingOutputBytes: Int { io?.pendingBytes ?? 0 }

    public func close() {
        guard state != .closed else { return }
        state = .closed
        handler = nil
        if let io { io.cancel() } else { _ = Glibc.close(fd) }
    }

    public func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        if let io { io.whenClosed(completion) } else { completion() }
    }

    /// Reads until the kernel has nothing more (EAGAIN), framing packets as they complete.
    private func readAvailable() {
        while state == .open {
            let n = read(fd, readBuffer.baseAddress, readBuffer.count)
            if n > 0 {
                do {
                    let acl = aclReceiver ?? { _ in false }
                    try framer.feed(UnsafeRawBufferPointer(rebasing: readBuffer[..<n]), acl: { state == .open && acl($0) }) { packet in
                        if state == .open { handler?(.packet(packet)) }
                    }
                } catch {
                    fail(error)
                    return
                }
                if n < readBuffer.count { return }
            } else if n == 0 {
                do {
                    try framer.finish()
                    fail(.lost(endpoint: name, reason: "the other end closed the stream (end of file)"))
                } catch {
                    fail(error)
                }
                return
            } else {
                let err = errno
                if err == EINTR { continue }
                if err == EAGAIN || err == EWOULDBLOCK { return }
                // A pty master reads EIO once every slave fd is closed; ours stays open, so EIO is real.
                fail(.lost(endpoint: name, reason: "read failed: \(errnoName(err))"))
                return
            }
        }
    }

    /// Ends the transport and reports why, once.
    private func fail(_ error: TransportError) {
        guard state != .closed || handler != nil else { return }
        let handler = self.handler
        state = .closed
        self.handler = nil
        io?.cancel()
        handler?(.closed(error))
    }
}
