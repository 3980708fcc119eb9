#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import BLEWire
import Synchronization

/// Reports a socket error that neither a read nor a write would reveal in time. libdispatch's
/// epoll backend hands a read source EPOLLIN and EPOLLHUP but drops EPOLLERR, and an HCI
/// socket whose adapter the kernel unregisters (a USB dongle unplugged, /dev/vhci closed)
/// reports only that: its error becomes EPIPE and nothing arrives to read. A private epoll
/// instance watching the socket for errors alone is readable exactly then, and a dispatch
/// read source on it fires once.
///
/// Its own descriptor is closed when the watch fires or is cancelled.
final class SocketErrorWatch: Sendable {
    /// Nil once cancelled; taken on the control path only (start, cancel, the one error).
    private let source: Mutex<(any DispatchSourceRead)?>

    /// Starts watching `fd`; nil when the epoll instance cannot be made (nothing is watched).
    init?(fd: Int32, queue: DispatchQueue, onError: @escaping @Sendable (Int32) -> Void) {
        let ep = chci_error_watch_open(fd)
        guard ep >= 0 else { return nil }
        let source = DispatchSource.makeReadSource(fileDescriptor: ep, queue: queue)
        source.setCancelHandler { _ = Glibc.close(ep) }
        self.source = Mutex(source)
        self.source.withLock { source in
            source?.setEventHandler { [weak self] in
                var err: Int32 = 0
                guard chci_error_watch_check(ep, fd, &err) == 1 else { return }
                self?.cancel()
                onError(err)
            }
            source?.resume()
        }
    }

    deinit {
        // The event handler holds the watch only while it runs, so this never races it.
        source.withLock { $0?.cancel() }
    }

    /// Stops watching. Idempotent.
    func cancel() {
        source.withLock { source in
            source?.cancel()
            source = nil
        }
    }
}
