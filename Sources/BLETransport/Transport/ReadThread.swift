#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import BLEWire

/// Waits for a descriptor to become readable on a thread of its own and runs `onReadable`
/// on `queue` with `queue.sync`, which runs it on this thread when the queue is idle.
///
/// A dispatch read source takes two thread wake-ups per readable event (the dispatch manager
/// thread's epoll, then a worker for the queue); this takes one. At 10,000 advertising reports
/// a second arriving one per read, that is most of a gateway's scheduling cost.
///
///     let reader = try ReadThread(fd: fd, queue: queue, onReadable: { drain(fd) }, onExit: { close(fd) })
///     try reader.start()
///     ...
///     reader.stop()   // on `queue`; `onExit` runs on `queue` once the thread no longer polls `fd`
final class ReadThread: Sendable {
    private enum State: UInt8 { case running, paused, stopped }

    private let fd: Int32
    private let queue: DispatchQueue
    private let onReadable: @Sendable () -> Void
    private let onExit: @Sendable () -> Void
    private let state = Atomic<UInt8>(State.running.rawValue)
    /// A pipe whose read end is polled beside `fd`: a byte written wakes the thread to look at
    /// `state` again (pause, resume, stop).
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// Fails with errno when no pipe can be made.
    init(fd: Int32, queue: DispatchQueue, onReadable: @escaping @Sendable () -> Void,
         onExit: @escaping @Sendable () -> Void) throws(ReadThreadError) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw ReadThreadError(operation: "pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = DispatchFD.setNonBlocking(end)
        }
        self.fd = fd
        self.queue = queue
        self.onReadable = onReadable
        self.onExit = onExit
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Starts the thread; fails with errno when none can be made.
    func start() throws(ReadThreadError) {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let err = pthread_create(&thread, nil, { context in
            let reader = Unmanaged<ReadThread>.fromOpaque(context!).takeRetainedValue()
            reader.run()
            return nil
        }, context)
        guard err == 0 else {
            Unmanaged<ReadThread>.fromOpaque(context).release()
            throw ReadThreadError(operation: "pthread_create", errno: err)
        }
        pthread_detach(thread)
    }

    /// `fd` is not polled (its data waits in the kernel) until `resume()`.
    func pause() { set(.paused) }
    func resume() { set(.running) }
    /// The thread ends; `onExit` follows on `queue`. Idempotent.
    func stop() { set(.stopped) }

    /// Called on `queue` only, so a stopped reader is never started again.
    private func set(_ new: State) {
        guard current != .stopped else { return }
        state.store(new.rawValue, ordering: .sequentiallyConsistent)
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private var current: State { State(rawValue: state.load(ordering: .sequentiallyConsistent)) ?? .stopped }

    private func run() {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var sink = [UInt8](repeating: 0, count: 64)
        while current != .stopped {
            // A negative descriptor is skipped by poll: paused, only the wake pipe is watched.
            fds[0].fd = current == .running ? fd : -1
            fds[0].revents = 0
            fds[1].revents = 0
            // Two descriptors and no timeout: it can fail only with EINTR or ENOMEM, both passing.
            guard poll(&fds, 2, -1) >= 0 else { continue }
            if fds[1].revents != 0 { _ = Glibc.read(wakeRead, &sink, sink.count) }
            // Readable, hung up or failed: the handler's read finds out which.
            if fds[0].revents != 0, current == .running {
                queue.sync { if current == .running { onReadable() } }
            }
        }
        queue.async { [onExit] in onExit() }
    }
}

/// A reader thread could not be set up.
package struct ReadThreadError: Error {
    package let operation: String
    package let errno: Int32
}
