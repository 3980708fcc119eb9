#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import CHCI
import Synchronization
import BLEWire

/// A non-blocking file descriptor served on one serial queue: a `ReadThread` that calls back
/// on the queue when bytes are ready, and an outgoing queue drained by a write source that is
/// armed only while bytes wait (a full socket or UART never blocks the queue and never drops a
/// packet).
///
/// Used on `queue` (checked in debug builds); `start` may come before, from any thread. The
/// fd is closed once the reader has stopped and the write source has been cancelled.
package final class DispatchFD: Sendable {
    let fd: Int32
    package let queue: DispatchQueue
    /// Packet sockets: each write carries one whole packet. Streams: partial writes continue.
    private let packetMode: Bool
    /// Sockets are written with send(MSG_NOSIGNAL) so a dead peer gives EPIPE, not SIGPIPE.
    private let isSocket: Bool
    /// The writing side and the descriptor's end, on `queue`.
    private let writing: QueueConfined<Writing>
    /// The reading side: set up by `start`, which may run off the queue, and taken on the
    /// control path only (pause, resume, cancel, a failed write, the reader's exit).
    private let reading = Mutex<Reading>(Reading())

    private struct Reading {
        var reader: ReadThread?
        /// The reader thread runs, or its exit has not been handled yet.
        var isLive = false
        /// Called on `queue` when a queued write fails with `errno`.
        var onWriteError: (@Sendable (Int32) -> Void)?
    }

    private struct Writing {
        var writeSource: (any DispatchSourceWrite)?
        /// The write source exists and its cancel handler has not run yet.
        var writeSourceIsLive = false
        var writeArmed = false
        var outgoing: [[UInt8]] = []
        var outgoingHead = 0
        var headOffset = 0
        var cancelled = false
        /// Set once the fd is closed; `releaseWaiters` run then.
        var released = false
        var releaseWaiters: [@Sendable () -> Void] = []
        var pendingBytes = 0
        var onDrained: (@Sendable () -> Void)?
    }

    /// Bytes accepted by `write` and not yet handed to the kernel.
    package var pendingBytes: Int { writing.value.pendingBytes }
    /// Runs on `queue` each time the outgoing queue empties (every packet went to the kernel).
    package var onDrained: (@Sendable () -> Void)? {
        get { writing.value.onDrained }
        set { writing.value.onDrained = newValue }
    }

    package init(fd: Int32, queue: DispatchQueue, packetMode: Bool, isSocket: Bool) {
        self.fd = fd
        self.queue = queue
        self.packetMode = packetMode
        self.isSocket = isSocket
        writing = QueueConfined(Writing(), on: queue)
    }

    /// Sets O_NONBLOCK; returns errno on failure.
    static func setNonBlocking(_ fd: Int32) -> Int32? {
        chci_set_nonblocking(fd) < 0 ? errno : nil
    }

    /// Starts reading; fails with errno when the reader thread cannot be set up.
    package func start(onReadable: @escaping @Sendable () -> Void, onWriteError: @escaping @Sendable (Int32) -> Void) throws(ReadThreadError) {
        reading.withLock { $0.onWriteError = onWriteError }
        let reader = try ReadThread(fd: fd, queue: queue, onReadable: onReadable) { [self] in readerExited() }
        try reader.start()
        reading.withLock { reading in
            reading.reader = reader
            reading.isLive = true
        }
    }

    /// Stops calling `onReadable` until `resumeReading()`: data waits in the kernel (which, on
    /// a credit-based L2CAP channel, then grants the peer no more credits).
    package func pauseReading() {
        guard !writing.value.cancelled else { return }
        reading.withLock { $0.reader }?.pause()
    }

    package func resumeReading() {
        guard !writing.value.cancelled else { return }
        reading.withLock { $0.reader }?.resume()
    }

    /// Queues `bytes` (one packet) and writes as much as the kernel takes now.
    /// Returns errno when the descriptor failed; the bytes are then not sent.
    package func write(_ bytes: [UInt8]) -> Int32? {
        guard !writing.value.cancelled else { return EBADF }
        if writing.value.outgoingHead == writing.value.outgoing.count {
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
        if writing.value.outgoingHead == writing.value.outgoing.count {
            writing.value.outgoing.removeAll(keepingCapacity: true)
            writing.value.outgoingHead = 0
            writing.value.headOffset = offset
        }
        if writing.value.outgoingHead >= 1024 && writing.value.outgoingHead * 2 >= writing.value.outgoing.count {
            writing.value.outgoing.removeFirst(writing.value.outgoingHead)
            writing.value.outgoingHead = 0
        }
        writing.value.outgoing.append(bytes)
        let waiting = writing.value.outgoing.count - writing.value.outgoingHead
        writing.value.pendingBytes += bytes.count - (waiting == 1 ? offset : 0)
        armWriter()
    }

    private func armWriter() {
        guard !writing.value.writeArmed else { return }
        let source: any DispatchSourceWrite
        if let existing = writing.value.writeSource {
            source = existing
        } else {
            source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [self] in drain() }
            source.setCancelHandler { [self] in writeSourceCancelled() }
            writing.value.writeSourceIsLive = true
            writing.value.writeSource = source
        }
        writing.value.writeArmed = true
        source.resume()
    }

    /// Writes queued packets while the kernel accepts them; disarms when empty.
    private func drain() {
        while writing.value.outgoingHead < writing.value.outgoing.count {
            let bytes = writing.value.outgoing[writing.value.outgoingHead]
            switch writeOnce(bytes, from: writing.value.headOffset) {
            case .wrote(let n):
                writing.value.pendingBytes -= n
                if packetMode || writing.value.headOffset + n == bytes.count {
                    if packetMode { writing.value.pendingBytes -= bytes.count - n }
                    writing.value.outgoing[writing.value.outgoingHead] = []
                    writing.value.outgoingHead += 1
                    writing.value.headOffset = 0
                } else {
                    writing.value.headOffset += n
                }
            case .wouldBlock:
                return
            case .failed(let err):
                disarm()
                reading.withLock { $0.onWriteError }?(err)
                return
            }
        }
        writing.value.outgoing.removeAll(keepingCapacity: true)
        writing.value.outgoingHead = 0
        disarm()
        // Copied out first: the handler may call back into this object.
        let onDrained = writing.value.onDrained
        onDrained?()
    }

    private func disarm() {
        guard writing.value.writeArmed else { return }
        writing.value.writeArmed = false
        let source = writing.value.writeSource
        source?.suspend()
    }

    /// Stops both sources; the fd is closed when their cancel handlers have run. Idempotent.
    package func cancel() {
        guard !writing.value.cancelled else { return }
        writing.value.cancelled = true
        writing.value.onDrained = nil
        writing.value.outgoing = []
        writing.value.outgoingHead = 0
        writing.value.pendingBytes = 0
        let (reader, readerIsLive) = reading.withLock { reading in
            reading.onWriteError = nil
            return (reading.reader, reading.isLive)
        }
        reader?.stop()
        if let writeSource = writing.value.writeSource {
            writeSource.cancel()
            // A suspended source never runs its cancel handler; resume it so it can.
            if !writing.value.writeArmed { writing.value.writeArmed = true; writeSource.resume() }
        }
        if !readerIsLive && !writing.value.writeSourceIsLive { closeDescriptor() }
    }

    /// Runs `body` on `queue` once the fd is closed (at once if it already is). It is closed a
    /// turn of the queue after `cancel()` at the earliest, not within it.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        if writing.value.released { body() } else { writing.value.releaseWaiters.append(body) }
    }

    private func readerExited() {
        reading.withLock { reading in
            reading.isLive = false
            reading.reader = nil
        }
        if !writing.value.writeSourceIsLive { sourcesEnded() }
    }

    private func writeSourceCancelled() {
        writing.value.writeSourceIsLive = false
        if !reading.withLock({ $0.isLive }) { sourcesEnded() }
    }

    /// Both sources are done: the fd goes, and the sources with it.
    private func sourcesEnded() {
        closeDescriptor()
        writing.value.writeSource = nil
    }

    private func closeDescriptor() {
        guard !writing.value.released else { return }
        _ = Glibc.close(fd)
        writing.value.released = true
        let waiters = writing.value.releaseWaiters
        writing.value.releaseWaiters = []
        for w in waiters { w() }
    }
}
