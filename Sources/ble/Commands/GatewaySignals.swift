import Dispatch
import Glibc

/// SIGTERM and SIGHUP for `ble gateway`, through a handler of its own and a pipe instead of a
/// dispatch signal source. libdispatch on Linux reads a signal source's signals from a signalfd,
/// yet after `dispatchMain()` the main thread waits in sigsuspend with no signal blocked, so the
/// kernel may hand a process-directed signal to that thread, whose handler drops it: on a loaded
/// machine about one SIGTERM in fifteen was lost and the gateway never stopped. This handler runs
/// on whichever thread takes the signal and only writes the signal's number to a pipe (write(2)
/// is async-signal-safe); a read source on the pipe calls `handle` on `queue`.
///
///     let signals = GatewaySignals.start([SIGTERM, SIGHUP], queue: .main) { number in ... }
enum GatewaySignals {
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

    /// Takes `signals` from now on; nil (the signals keep their default action) when no pipe
    /// could be made. Cancel the returned source to stop handling them.
    static func start(_ signals: [Int32], queue: DispatchQueue, handle: @escaping @Sendable (Int32) -> Void) -> (any DispatchSourceRead)? {
        let ends = self.ends
        guard ends.read >= 0 else { return nil }
        let source = DispatchSource.makeReadSource(fileDescriptor: ends.read, queue: queue)
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            while true {
                let n = read(ends.read, &bytes, bytes.count)
                guard n > 0 else { return }
                for number in bytes[..<n] { handle(Int32(number)) }
            }
        }
        source.resume()
        for number in signals {
            signal(number) { number in
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(GatewaySignals.ends.write, &byte, 1)
                errno = saved
            }
        }
        return source
    }
}
