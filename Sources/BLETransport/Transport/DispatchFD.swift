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
/// Used only on `queue` (checked in debug builds). The fd is closed once the reader has
/// stopped and the write source has been cancelled.
package final class DispatchFD: Sendable {
    let fd: Int32
    package let queue: DispatchQueue
    /// Packet sockets: each write carries one whole packet. Streams: partial writes continue.
    private let packetMode: Bool
    /// Sockets are written with send(MSG_NOSIGNAL) so a dead peer gives EPIPE, not SIGPIPE.
    private let isSocket: Bool
    private let state: QueueConfined<State>

    /// What `queue` owns.
    private struct State {
        var reader: ReadThread?
        var writeSource: (any DispatchSourceWrite)?
        var writeArmed = false
        var outgoing: [[UInt8]] = []
        var outgoingHead = 0
        var headOffset = 0
        var liveSources = 0
        var cancelled = false
        /// Called on `queue` when a queued write fails with `errno`.
        var onWriteError: (@Sendable (Int32) -> Void)?
        /// Set once the fd is closed; `releaseWaiters` run then.
        var released = false
        var releaseWaiters: [@Sendable () -> Void] = []
        var pendingBytes = 0
        var onDrained: (@Sendable () -> Void)?
    }

    /// Bytes accepted by `write` and not yet handed to the kernel.
    package var pendingBytes: Int { state.value.pendingBytes }
    /// Runs on `queue` each time the outgoing queue empties (every packet went to the kernel).
    package var onDrained: (@Sendable () -> Void)? {
        get { state.value.onDrained }
        set { state.value.onDrained = newValue }
    }

    package init(fd: Int32, queue: DispatchQueue, packetMode: Bool, isSocket: Bool) {
        self.fd = fd
        self.queue = queue
        self.packetMode = packetMode
        self.isSocket = isSocket
        state = QueueConfined(State(), on: queue)
    }

    /// Sets O_NONBLOCK; returns errno on failure.
    static func setNonBlocking(_ fd: Int32) -> Int32? {
        chci_set_nonblocking(fd) < 0 ? errno : nil
    }

    /// Starts reading; fails with errno when the reader thread cannot be set up.
    package func start(onReadable: @escaping @Sendable () -> Void, onWriteError: @escaping @Sendable (Int32) -> Void) throws(ReadThreadError) {
        state.value.onWriteError = onWriteError
        let reader = try ReadThread(fd: fd, queue: queue, onReadable: onReadable) { [self] in sourceCancelled() }
        try reader.start()
        state.value.liveSources += 1
        state.value.reader = reader
    }

    /// Stops calling `onReadable` until `resumeReading()`: data waits in the kernel (which, on
    /// a credit-based L2CAP channel, then grants the peer no more credits).
    package func pauseReading() {
        guard !state.value.cancelled, let reader = state.value.reader else { return }
        reader.pause()
    }

    package func resumeReading() {
        guard !state.value.cancelled, let reader = state.value.reader else { return }
        reader.resume()
    }

    /// Queues `bytes` (one packet) and writes as much as the kernel takes now.
    /// Returns errno when the descriptor failed; the bytes are then not sent.
    package func write(_ bytes: [UInt8]) -> Int32? {
        guard !state.value.cancelled else { return EBADF }
        if state.value.outgoingHead == state.value.outgoing.count {
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
        if state.value.outgoingHead == state.value.outgoing.count {
            state.value.outgoing.removeAll(keepingCapacity: true)
            state.value.outgoingHead = 0
            state.value.headOffset = offset
        }
        if state.value.outgoingHead >= 1024 && state.value.outgoingHead * 2 >= state.value.outgoing.count {
            state.value.outgoing.removeFirst(state.value.outgoingHead)
            state.value.outgoingHead = 0
        }
        state.value.outgoing.append(bytes)
        state.value.pendingBytes += bytes.count - (state.value.outgoing.count - state.value.outgoingHead == 1 ? offset : 0)
        armWriter()
    }

    private func armWriter() {
        guard !state.value.writeArmed else { return }
        let source: any DispatchSourceWrite
        if let existing = state.value.writeSource {
            source = existing
        } else {
            source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [self] in drain() }
            source.setCancelHandler { [self] in sourceCancelled() }
            state.value.liveSources += 1
            state.value.writeSource = source
        }
        state.value.writeArmed = true
        source.resume()
    }

    /// Writes queued packets while the kernel accepts them; disarms when empty.
    private func drain() {
        while state.value.outgoingHead < state.value.outgoing.count {
            let bytes = state.value.outgoing[state.value.outgoingHead]
            switch writeOnce(bytes, from: state.value.headOffset) {
            case .wrote(let n):
                state.value.pendingBytes -= n
                if packetMode || state.value.headOffset + n == bytes.count {
                    if packetMode { state.value.pendingBytes -= bytes.count - n }
                    state.value.outgoing[state.value.outgoingHead] = []
                    state.value.outgoingHead += 1
                    state.value.headOffset = 0
                } else {
                    state.value.headOffset += n
                }
            case .wouldBlock:
                return
            case .failed(let err):
                disarm()
                // Copied out first: the handler may call back into this object.
                let onWriteError = state.value.onWriteError
                onWriteError?(err)
                return
            }
        }
        state.value.outgoing.removeAll(keepingCapacity: true)
        state.value.outgoingHead = 0
        disarm()
        let onDrained = state.value.onDrained
        onDrained?()
    }

    private func disarm() {
        guard state.value.writeArmed else { return }
        state.value.writeArmed = false
        let source = state.value.writeSource
        source?.suspend()
    }

    /// Stops both sources; the fd is closed when their cancel handlers have run. Idempotent.
    package func cancel() {
        guard !state.value.cancelled else { return }
        state.value.cancelled = true
        state.value.onWriteError = nil
        state.value.onDrained = nil
        state.value.outgoing = []
        state.value.outgoingHead = 0
        state.value.pendingBytes = 0
        let reader = state.value.reader
        reader?.stop()
        if let writeSource = state.value.writeSource {
            writeSource.cancel()
            // A suspended source never runs its cancel handler; resume it so it can.
            if !state.value.writeArmed { state.value.writeArmed = true; writeSource.resume() }
        }
        if state.value.liveSources == 0 { closeDescriptor() }
    }

    /// Runs `body` on `queue` once the fd is closed (at once if it already is). It is closed a
    /// turn of the queue after `cancel()` at the earliest, not within it.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        if state.value.released { body() } else { state.value.releaseWaiters.append(body) }
    }

    private func sourceCancelled() {
        state.value.liveSources -= 1
        if state.value.liveSources == 0 {
            closeDescriptor()
            state.value.reader = nil
            state.value.writeSource = nil
        }
    }

    private func closeDescriptor() {
        guard !state.value.released else { return }
        _ = Glibc.close(fd)
        state.value.released = true
        let waiters = state.value.releaseWaiters
        state.value.releaseWaiters = []
        for w in waiters { w() }
    }
}
