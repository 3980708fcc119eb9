import BLECore
import FoundationEssentials
import Glibc
import BLEWire
import BLETransport

/// Options every subcommand accepts, before or after its name.
struct GlobalOptions: Sendable {
    /// Transport spec of the controller (`-d`), default `$BLE_DEVICE`, else `hci0`.
    var device: String
    /// Tee every HCI packet of the session into this btsnoop file.
    var btsnoop: String?
    var json: Bool
    /// Number of `-v`.
    var verbosity: Int
    /// Bound on connecting and on each non-streaming step, in seconds.
    var timeout: Double
    /// Where bonds are kept (`--bond-dir`); nil: `$BLE_BOND_DIR` or the default.
    var bondDirectory: String?
    /// `$BLE_LOG` (trace, debug, info, notice, warning, error, critical), else warning.
    var environmentLogLevel: LogLevel

    static let specs: [OptionSpec] = [
        .value("device", "d", "SPEC", "controller: hci0, hci-raw:0, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyUSB0[@BAUD][,rtscts] (default $BLE_DEVICE, else hci0)"),
        .value("btsnoop", nil, "FILE", "write every HCI packet of the session to FILE (btsnoop, readable by btmon -r, Wireshark, 'ble decode')"),
        .flag("json", nil, "machine-readable output: one JSON object per line"),
        .flag("verbose", "v", "more log output on stderr (repeat: -vv debug, -vvv trace)"),
        .value("timeout", nil, "SECONDS", "give up connecting or waiting for one answer after SECONDS (default 15)"),
        .value("bond-dir", nil, "DIR", "keep bonds in DIR (default $BLE_BOND_DIR, else ~/.local/state/swift-ble-host/bonds)"),
        .flag("help", "h", "show this help"),
    ]

    init(_ args: ParsedArguments, environment: [String: String]) throws(UsageError) {
        device = args.value("device") ?? environment["BLE_DEVICE"].flatMap { $0.isEmpty ? nil : $0 } ?? "hci0"
        btsnoop = args.value("btsnoop")
        json = args.has("json")
        verbosity = args.count("verbose")
        environmentLogLevel = environment["BLE_LOG"].flatMap { LogLevel(name: $0) } ?? .warning
        timeout = try args.value("timeout").map { v throws(UsageError) in try Values.seconds(v, option: "--timeout") } ?? 15
        bondDirectory = args.value("bond-dir") ?? environment["BLE_BOND_DIR"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var timeoutDuration: Duration { .milliseconds(Int64(timeout * 1000)) }

    /// The library log level for the verbosity: warnings by default (or `$BLE_LOG`), then
    /// info, debug, trace.
    var logLevel: LogLevel {
        switch verbosity {
        case 0: return environmentLogLevel
        case 1: return .info
        case 2: return .debug
        default: return .trace
        }
    }
}

/// Conversions of option values, each failing with a usage error naming the option.
enum Values {
    static func seconds(_ s: String, option: String) throws(UsageError) -> Double {
        guard let v = Double(s), v.isFinite, v > 0, v <= 86_400 else {
            throw UsageError("\(option) needs a number of seconds between 0 and 86400, not \"\(s)\"")
        }
        return v
    }

    static func integer<T: FixedWidthInteger>(_ s: String, option: String, as: T.Type = T.self) throws(UsageError) -> T {
        let v: T?
        if s.lowercased().hasPrefix("0x") { v = T(s.dropFirst(2), radix: 16) } else { v = T(s) }
        guard let v else {
            throw UsageError("\(option) needs an integer from \(T.min) to \(T.max) (decimal or 0x hex), not \"\(s)\"")
        }
        return v
    }

    static func uuid(_ s: String, option: String) throws(UsageError) -> BluetoothUUID {
        guard let u = BluetoothUUID(s) else {
            throw UsageError("\(option) needs a UUID like 180D, 0000180D or 6E400001-B5A3-F393-E0A9-E50E24DCCA9E, not \"\(s)\"")
        }
        return u
    }

    static func adapterIndex(_ s: String, option: String) throws(UsageError) -> Int {
        let digits = s.hasPrefix("hci") ? String(s.dropFirst(3)) : s
        guard let n = Int(digits), n >= 0, n < 16 else {
            throw UsageError("\(option) needs an adapter like hci0 (or its index 0), not \"\(s)\"")
        }
        return n
    }

    /// Hex bytes: "0a0b", "0A 0B", "0a:0b", "0x0a0b".
    static func hexBytes(_ s: String, option: String) throws(UsageError) -> [UInt8] {
        var text = Substring(s)
        if text.lowercased().hasPrefix("0x") { text = text.dropFirst(2) }
        let digits = text.filter { $0 != " " && $0 != ":" && $0 != "-" }
        guard digits.count % 2 == 0 else { throw UsageError("\(option) needs whole bytes (an even number of hex digits), not \"\(s)\"") }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var it = digits.makeIterator()
        while let hi = it.next(), let lo = it.next() {
            guard let h = hi.hexDigitValue, let l = lo.hexDigitValue else {
                throw UsageError("\(option) needs hex digits 0-9, a-f, not \"\(s)\"")
            }
            out.append(UInt8(h << 4 | l))
        }
        return out
    }
}
