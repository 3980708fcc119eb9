#if canImport(Glibc)
import Glibc
import BLEWire
import BLETransport
import BLECore
#endif

/// Why a `Restoration` or its `RestorationStore` could not do what was asked. A file that
/// cannot be used is never lost: it is kept aside (`keptAt`) and the store starts empty.
///
///     do { events = try await restoration.restore() } catch { print(error) }   // the file's problem, and where it went
public enum RestorationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file does not hold links this build wrote (cut short, damaged): kept at `keptAt`.
    case corrupt(path: String, keptAt: String, detail: String)
    /// The file is another version's: kept at `keptAt` for the build that reads it.
    case unsupportedVersion(path: String, version: UInt8, keptAt: String)
    /// A system call on `path` failed.
    case io(path: String, operation: String, errno: Int32)
    /// The state directory is a symbolic link, not a directory, or another user's.
    case unsafeDirectory(path: String, detail: String)
    /// A store holds at most `limit` links, and a link `limit` subscriptions.
    case tooMany(what: String, limit: Int)
    /// A `.custom` reconnect policy is a closure and cannot be written to a file.
    case customPolicy(peer: BluetoothAddress)
    /// The link could not be made.
    case connection(ConnectionError)
    /// The GATT client failed (the Database Hash, a subscription).
    case gatt(GATTError)
    /// The link could not be raised to `level` (with the bond, or by pairing).
    case security(peer: BluetoothAddress, level: SecurityLevel, reason: String)
    /// The central stopped its background connections without an error (it was closed), so
    /// `restore()` cannot bring its devices back any more. (Other `Central.connect(whenSeen:)`
    /// calls run beside a restore and do not end it.)
    case backgroundConnectionsReplaced

    public var description: String {
        switch self {
        case .corrupt(let path, let keptAt, let detail):
            return "restoration file \(path) is unusable (\(detail)); it was kept at \(keptAt) and the app starts with no stored links"
        case .unsupportedVersion(let path, let version, let keptAt):
            return "restoration file \(path) is version \(version), this build reads version \(RestorationFile.version); it was kept at \(keptAt) and the app starts with no stored links"
        case .io(let path, let operation, let code):
            return "restoration store: \(operation) \(path) failed: \(String(cString: strerror(code))) (errno \(code)); check the state directory's permissions and free space"
        case .unsafeDirectory(let path, let detail):
            return "restoration store: directory \(path) is not used: \(detail); make it a directory of your own (mode 0700) or choose another"
        case .tooMany(let what, let limit):
            return "restoration store: at most \(limit) \(what); forget some first"
        case .customPolicy(let peer):
            return "the reconnect policy of \(peer) is .custom, a closure that cannot be stored; use .never or .always(maxAttempts:backoff:)"
        case .connection(let error):
            return "\(error)"
        case .gatt(let error):
            return "\(error)"
        case .security(let peer, let level, let reason):
            return "restoring \(peer): raising the link to \(level) failed: \(reason); pair the device again (ble pair) or store the link with a lower level"
        case .backgroundConnectionsReplaced:
            return "restoration ended: the central stopped its background connections (it was closed); call restore() again on the central that replaces it"
        }
    }

    init(_ error: StateFileError) {
        switch error {
        case .io(let path, let operation, let code): self = .io(path: path, operation: operation, errno: code)
        case .unsafeDirectory(let path, let detail): self = .unsafeDirectory(path: path, detail: detail)
        }
    }
}

extension RestorationError: BLEError {
    public var isCancellation: Bool {
        switch self {
        case .connection(let error): return error.isCancellation
        case .gatt(let error): return error.isCancellation
        default: return false
        }
    }
}
