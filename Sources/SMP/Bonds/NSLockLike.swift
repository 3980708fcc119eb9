import Synchronization

/// A mutex for the bond stores, which apps call from any thread (off the data path).
final class NSLockLike: Sendable {
    private let mutex = Mutex<Void>(())
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        try mutex.withLock { _ in try body() }
    }
}
