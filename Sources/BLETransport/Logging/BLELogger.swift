import BLEWire

/// Severity of a log line: the seven levels of swift-log's `Logger.Level`, with the same
/// names (`description`), so a bridge maps them by name.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        ["trace", "debug", "info", "notice", "warning", "error", "critical"][rawValue]
    }

    /// The level named `name` ("debug", "WARNING", ...); nil for anything else.
    ///
    ///     let level = LogLevel(name: environment["BLE_LOG"] ?? "") ?? .warning
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }
}

/// One log line of the stack, with the fields of swift-log's `LogHandler.log`: level,
/// message, metadata (such as `peer` and `handle`), source (the emitting module), file,
/// function and line.
public struct BLELogRecord: Sendable {
    public var level: LogLevel
    public var message: String
    /// Context of the line: `peer` (an address), `handle` ("0x0040"), `opcode`, `stream`...
    public var metadata: [String: String]
    /// The label of the `BLELogger` that emitted it.
    public var label: String
    /// The module that emitted it ("BLECore", "GATTClient").
    public var source: String
    public var file: String
    public var function: String
    public var line: UInt
}

/// Where the stack's log lines go. The default (`.silent`) writes nothing anywhere: a library
/// does not write to stderr unless the application asks. Give a handler to receive every
/// record at or above `minimumLevel`, or use `standardError(label:minimumLevel:)`.
///
///     var options = Central.Options()
///     options.logger = .standardError(label: "myapp", minimumLevel: .info)
///
/// Bridging to swift-log takes a few lines (the levels share their names):
///
///     import Logging
///     let log = Logging.Logger(label: "ble")
///     options.logger = BLELogger(label: "ble", minimumLevel: .debug) { r in
///         log.log(level: Logging.Logger.Level(rawValue: r.level.description)!, "\(r.message)",
///                 metadata: r.metadata.mapValues { .string($0) },
///                 source: r.source, file: r.file, function: r.function, line: r.line)
///     }
public struct BLELogger: Sendable {
    /// Names the application's logger in records (and in `standardError` lines).
    public var label: String
    public var minimumLevel: LogLevel
    /// Added to every record's metadata (the record's own keys win).
    public var metadata: [String: String]
    /// Receives the records; nil discards everything without building the message.
    public var handler: (@Sendable (BLELogRecord) -> Void)?

    public init(label: String = "ble", minimumLevel: LogLevel = .info, metadata: [String: String] = [:],
                handler: (@Sendable (BLELogRecord) -> Void)?) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.metadata = metadata
        self.handler = handler
    }

    /// Discards everything: the default of every option that takes a logger.
    public static let silent = BLELogger(minimumLevel: .critical, handler: nil)

    /// True when nothing is delivered anywhere.
    public var isSilent: Bool { handler == nil }

    /// Writes "label[level]: message key=value ..." lines to stderr (fd 2) for records at or
    /// above `minimumLevel`.
    ///
    ///     options.logger = .standardError(label: "myapp", minimumLevel: .warning)
    public static func standardError(label: String, minimumLevel: LogLevel = .warning) -> BLELogger {
        BLELogger(label: label, minimumLevel: minimumLevel) { record in
            StandardError.write(record.formatted + "\n")
        }
    }

    /// True when a record of `level` would be delivered.
    @inlinable
    public func isEnabled(_ level: LogLevel) -> Bool { handler != nil && level >= minimumLevel }

    /// Emits a record when `level` is enabled; the message and metadata are built only then.
    @inlinable
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String,
                    metadata: @autoclosure () -> [String: String] = [:],
                    file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard let handler, level >= minimumLevel else { return }
        handler(record(level, message(), metadata(), file: file, function: function, line: line))
    }

    @usableFromInline
    func record(_ level: LogLevel, _ message: String, _ extra: [String: String],
                file: String, function: String, line: UInt) -> BLELogRecord {
        let source = file.firstIndex(of: "/").map { String(file[..<$0]) } ?? file
        return BLELogRecord(level: level, message: message, metadata: metadata.merging(extra) { _, new in new },
                            label: label, source: source, file: file, function: function, line: line)
    }

    /// This logger with `value` added under `key` in every record (e.g. a link's `peer`).
    public func with(_ key: String, _ value: String) -> BLELogger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }
}

extension BLELogRecord {
    /// "label[level]: message key=value ...", metadata sorted by key.
    public var formatted: String {
        var s = "\(label)[\(level)]: \(message)"
        for (k, v) in metadata.sorted(by: { $0.key < $1.key }) { s += " \(k)=\(v)" }
        return s
    }
}
