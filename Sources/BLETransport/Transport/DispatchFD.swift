#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import CHCI
import BLEWire

/// A non-blocking file descriptor served on one serial queue: a `ReadThread` that calls back
/// on the queue when bytes are ready, and an outgoing queue drained by a write source that is
/// armed only while bytes wait (a full socket or UART never blocks the queue and never drops a
/// packet).
///
/// Used only on `queue`. The fd is closed once the reader has stopped and the write source
/// has been cancelled.
package final class DispatchFD: @unchecked Sendable { // state touched only on `queue`
    let fd: Int32
    package let queue: DispatchQueue
    /// Packet sockets: each write carries one whole packet. Streams: partial writes continue.
    private let packetMode: Bool
    /// Sockets are written with send(MSG_NOSIGNAL) so a dead peer gives EPIPE, not SIGPIPE.
    private let isSocket: Bool
    private var reader: ReadThread?
    private var writeSource: DispatchSourceWrite?
    private var writeArmed = false
    private var outgoing: [[UInt8]] = []
    private var outgoingHead = 0
    private var headOffset = 0
    private var liveSources = 0
    private var cancelled = false
    /// Called on `queue` when a queued write fails with `errno`.
    private var onWriteError: (@Sendable (Int32) -> Void)?
    /// Set once the fd is closed; `releaseWaiters` run then.
    private var released = false
    private var releaseWaiters: [@Sendable () -> Void] = []

    /// Bytes accepted by `write` and not yet handed to the kernel.
    package private(set) var pendingBytes = 0
    /// Runs on `queue` each time the outgoing queue empties (every packet went to the kernel).
    package var onDrained: (@Sendable () -> Void)?

    package init(fd: Int32, queue: DispatchQueue, packetMode: Bool, isSocket: Bool) {
        self.fd = fd
        self.queue = queue
        self.packetMode = packetMode
        self.isSocket = isSocket
    }

    /// Sets O_NONBLOCK; returns errno on failure.
    static func setNonBlocking(_ fd: Int32) -> Int32? {
        chci_set_nonblocking(fd) < 0 ? errno : nil
    }

    /// Starts reading; fails with errno when the reader thread cannot be set up.
    package func start(onReadable: @escaping @Sendable () -> Void, onWriteError: @escaping @Sendable (Int32) -> Void) throws(ReadThreadError) {
        self.onWriteError = onWriteError
        let reader = try ReadThread(fd: fd, queue: queue, onReadable: onReadable) { [self] in sourceCancelled() }
        try reader.start()
        liveSources += 1
        self.reader = reader
    }

    /// Stops calling `onReadable` until `resumeReading()`: data waits in the kernel (which, on
    /// a credit-based L2CAP channel, then grants the peer no more credits).
    package func pauseReading() {
        guard !cancelled else { return }
        reader?.pause()
    }

    package func resumeReading() {
        guard !cancelled else { return }
        reader?.resume()
    }

    /// Queues `bytes` (one packet) and writes as much as the kernel takes now.
    /// Returns errno when the descriptor failed; the bytes are then not sent.
    package func write(_ bytes: [UInt8]) -> Int32? {
        guard !cancelled else { return EBADF }
        if outgoingHead == outgoing.count {
            // Nothing queued: try the fast path straight from `bytes`.
            switch writeOnce(bytes, from: 0) {
            case .wrote(let n) where n == bytes.count || packetMode:
                return nil
            case .wrote(let n):
                enqueue(bytes, offset: n)
            case .wouldBlock:
                enqueue(bytes, offset: 0)
            case .failed(let err):
                return err
            }
            return nil
        }
        enqueue(bytes, offset: 0)
        return nil
    }

    private enum WriteResult { case wrote(Int), wouldBlock, failed(Int32) }

    private func writeOnce(_ bytes: [UInt8], from offset: Int) -> WriteResult {
        while true {
            let n = bytes.withUnsafeBytes { buf -> Int in
                guard let base = buf.baseAddress else { return 0 }
                if isSocket { return send(fd, base + offset, buf.count - offset, Int32(MSG_NOSIGNAL)) }
                return Glibc.write(fd, base + offset, buf.count - offset)
            }
            if n >= 0 { return .wrote(n) }
            let err = errno
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
            return .failed(err)
        }
    }

    private func enqueue(_ bytes: [UInt8], offset: Int) {
        if outgoingHead == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingHead = 0
            headOffset = offset
        }
        if outgoingHead >= 1024 && outgoingHead * 2 >= outgoing.count {
            outgoing.removeFirst(outgoingHead)
            outgoingHead = 0
        }
        outgoing.append(bytes)
        pendingBytes += bytes.count - (outgoing.count - outgoingHead == 1 ? offset : 0)
        armWriter()
    }

    private func armWriter() {
        guard !writeArmed else { return }
        if writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [self] in drain() }
            source.setCancelHandler { [self] in sourceCancelled() }
            liveSources += 1
            writeSource = source
        }
        writeArmed = true
        writeSource?.resume()
    }

    /// Writes queued packets while the kernel accepts them; disarms when empty.
    private func drain() {
        while outgoingHead < outgoing.count {
            let bytes = outgoing[outgoingHead]
            switch writeOnce(bytes, from: headOffset) {
            case .wrote(let n):
                pendingBytes -= n
                if packetMode || headOffset + n == bytes.count {
                    if packetMode { pendingBytes -= bytes.count - n }
                    outgoing[outgoingHead] = []
                    outgoingHead += 1
                    headOffset = 0
                } else {
                    headOffset += n
                }
            case .wouldBlock:
                return
            case .failed(let err):
                disarm()
                onWriteError?(err)
                return
            }
        }
        outgoing.removeAll(keepingCapacity: true)
        outgoingHead = 0
        disarm()
        onDrained?()
    }

    private func disarm() {
        guard writeArmed else { return }
        writeArmed = false
        writeSource?.suspend()
    }

    /// Stops both sources; the fd is closed when their cancel handlers have run. Idempotent.
    package func cancel() {
        guard !cancelled else { return }
        cancelled = true
        onWriteError = nil
        onDrained = nil
        outgoing = []
        outgoingHead = 0
        pendingBytes = 0
        reader?.stop()
        if let writeSource {
            writeSource.cancel()
            // A suspended source never runs its cancel handler; resume it so it can.
            if !writeArmed { writeArmed = true; writeSource.resume() }
        }
        if liveSources == 0 { closeDescriptor() }
    }

    /// Runs `body` on `queue` once the fd is closed (at once if it already is). It is closed a
    /// turn of the queue after `cancel()` at the earliest, not within it.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        if released { body() } else { releaseWaiters.append(body) }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 {
            closeDescriptor()
            reader = nil
            writeSource = nil
        }
    }

    private func closeDescriptor() {
        guard !released else { return }
        _ = Glibc.close(fd)
        released = true
        let waiters = releaseWaiters
        releaseWaiters = []
        for w in waiters { w() }
    }
}
