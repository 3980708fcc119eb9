import Dispatch
import Glibc
import Synchronization

/// The CLI's signals (SIGINT, SIGTERM, SIGHUP) through a handler of its own and a pipe, not a
/// dispatch signal source. libdispatch on Linux reads a signal source's signals from a signalfd,
/// yet after `dispatchMain()` the main thread waits in sigsuspend with no signal blocked, so the
/// kernel may hand a process-directed signal to that thread, whose handler drops it: on a loaded
/// machine about one SIGTERM in fifteen was lost and `ble gateway` never stopped. This handler
/// runs on whichever thread takes the signal and only writes the signal's number to a pipe
/// (write(2) is async-signal-safe); one read source on the main queue calls the watchers.
///
///     let watch = SignalPipe.watch([SIGTERM, SIGHUP]) { number in ... }   // on the main queue
///     defer { watch?.cancel() }
enum SignalPipe {
    /// A registration; cancel it to stop being called (the signals stay taken, and ignored).
    struct Watch: Sendable {
        fileprivate let id: Int
        func cancel() { SignalPipe.watchers.withLock { $0.list.removeAll { $0.id == id } } }
    }

    private struct Watcher {
        let id: Int
        let signals: [Int32]
        let handle: @Sendable (Int32) -> Void
    }

    /// The pipe's ends: the handler writes, the read source reads. Made before any handler is set.
    private static let ends: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return (fds[0], fds[1])
    }()

    private struct State {
        var next = 0
        var list: [Watcher] = []
        /// Kept here for the life of the process: a released source stops reading.
        var source: (any DispatchSourceRead)?
    }

    private static let watchers = Mutex(State())

    /// The one read source, made on first use; false when no pipe could be made.
    private static let reading: Bool = {
        let fd = ends.read
        guard fd >= 0 else { return false }
        watchers.withLock { state in
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .main)
            source.setEventHandler {
                var bytes = [UInt8](repeating: 0, count: 16)
                let n = read(fd, &bytes, bytes.count)
                guard n > 0 else { return }  // EAGAIN or EINTR: the source fires again while bytes wait
                for number in bytes[..<n].map(Int32.init) {
                    let handlers = watchers.withLock { $0.list.filter { $0.signals.contains(number) }.map(\.handle) }
                    for handle in handlers { handle(number) }
                }
            }
            source.resume()
            state.source = source
        }
        return true
    }()

    /// Calls `handle` on the main queue for each of `signals` from now on; nil (the signals keep
    /// their default action) when no pipe could be made.
    static func watch(_ signals: [Int32], handle: @escaping @Sendable (Int32) -> Void) -> Watch? {
        guard reading else { return nil }
        let id = watchers.withLock { w in
            w.next += 1
            w.list.append(Watcher(id: w.next, signals: signals, handle: handle))
            return w.next
        }
        for number in signals {
            signal(number) { number in
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalPipe.ends.write, &byte, 1)
                errno = saved
            }
        }
        return Watch(id: id)
    }
}
