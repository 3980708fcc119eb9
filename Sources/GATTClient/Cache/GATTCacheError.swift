#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// What went wrong with a persistent `GATTCache`'s directory. None of these loses a
/// connection's work: a peer whose file cannot be read or written is discovered over the air
/// as without a cache, and its file rewritten when it can be.
///
///     let cache = GATTCache(central: central, directory: GATTCache.defaultDirectory) { problem in print(problem) }
public enum GATTCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A file that does not hold a database this version wrote (cut short, damaged, another
    /// version's, another peer's). It was removed; the peer is discovered again and rewritten.
    case corrupt(path: String, detail: String)
    /// A system call on `path` failed.
    case io(path: String, operation: String, errno: Int32)
    /// The directory is a symbolic link, not a directory, or another user's: nothing is read
    /// from or written to it.
    case unsafeDirectory(path: String, detail: String)
    /// The peer's database encodes to more than the limit of one file: it stays in memory only.
    case tooLarge(peer: BluetoothAddress, size: Int, limit: Int)
    /// `flush` gave up waiting for the files still being written.
    case flushTimeout(pending: Int, limit: Duration)

    public var description: String {
        switch self {
        case .corrupt(let path, let detail):
            return "GATT cache file \(path) is unusable (\(detail)); it was removed and the peer will be discovered again"
        case .io(let path, let operation, let code):
            return "GATT cache: \(operation) \(path) failed: \(String(cString: strerror(code))) (errno \(code)); check the directory's permissions and free space, or pass --no-cache"
        case .unsafeDirectory(let path, let detail):
            return "GATT cache directory \(path) is not used: \(detail); make it a directory of your own (mode 0700) or choose another with BLE_GATT_CACHE_DIR"
        case .tooLarge(let peer, let size, let limit):
            return "GATT cache: the database of \(peer) takes \(size) bytes, more than the \(limit) of one file; it is kept in memory only"
        case .flushTimeout(let pending, let limit):
            return "GATT cache: \(pending) file(s) still being written after \(limit); they may be missing on the next run"
        }
    }
}
