#if canImport(Glibc)
import Glibc
#endif

/// Severity of a log line.
public enum LogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case trace, debug, info, warning, error
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { ["trace", "debug", "info", "warning", "error"][rawValue] }
}

/// Where the stack's log lines go. The default writes warnings and errors to stderr; set
/// `BLE_LOG=debug` (or trace/info) in the environment for more, or give your own sink.
///
///     let logger = Logger(minimumLevel: .debug) { level, text in myLog(text) }
public struct Logger: Sendable {
    public var minimumLevel: LogLevel
    public var sink: @Sendable (LogLevel, String) -> Void

    public init(minimumLevel: LogLevel = Logger.environmentLevel, sink: @escaping @Sendable (LogLevel, String) -> Void = Logger.stderrSink) {
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    @inlinable
    public func log(_ level: LogLevel, _ text: @autoclosure () -> String) {
        if level >= minimumLevel { sink(level, text()) }
    }

    public static let environmentLevel: LogLevel = {
        guard let raw = getenv("BLE_LOG") else { return .warning }
        switch String(cString: raw).lowercased() {
        case "trace": return .trace
        case "debug": return .debug
        case "info": return .info
        case "error": return .error
        default: return .warning
        }
    }()

    public static let stderrSink: @Sendable (LogLevel, String) -> Void = { level, text in
        var line = Array("ble[\(level)]: \(text)\n".utf8)
        _ = line.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// Discards everything.
    public static let silent = Logger(minimumLevel: .error, sink: { _, _ in })
}
