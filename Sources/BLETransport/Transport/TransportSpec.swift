#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// Where the controller is, as one string shared by the library and the `ble` CLI.
///
/// `hci0` (= `hci-user:0`), `hci-raw:0`, `tcp:HOST:PORT` (`tcp:[::1]:PORT`), `unix:PATH`,
/// `serial:/dev/ttyUSB0[@BAUD][,rtscts]`, `pty`, `replay:FILE.btsnoop`.
///
///     let spec = try TransportSpec.parse("serial:/dev/ttyUSB0@1000000,rtscts")
///     let transport = try spec.open()
public enum TransportSpec: Hashable, Sendable, CustomStringConvertible {
    /// HCI_CHANNEL_USER on adapter N: exclusive, the adapter must be down.
    case hciUser(index: Int)
    /// HCI_CHANNEL_RAW on adapter N, shared with the kernel.
    case hciRaw(index: Int)
    case tcp(host: String, port: UInt16)
    case unix(path: String)
    case serial(path: String, baud: Int, rtscts: Bool)
    case pty
    case replay(path: String)

    /// Baud rate when a serial spec names none.
    public static let defaultBaud = 115_200

    /// Rates termios knows by name (B1200 ... B4000000), in order.
    public static let standardBauds = [
        1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 500_000, 576_000,
        921_600, 1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
    ]

    /// The termios speed constant for a standard baud rate.
    public static func speed(forBaud baud: Int) -> speed_t? {
        let value: Int32
        switch baud {
        case 1200: value = B1200
        case 2400: value = B2400
        case 4800: value = B4800
        case 9600: value = B9600
        case 19200: value = B19200
        case 38400: value = B38400
        case 57600: value = B57600
        case 115_200: value = B115200
        case 230_400: value = B230400
        case 460_800: value = B460800
        case 500_000: value = B500000
        case 576_000: value = B576000
        case 921_600: value = B921600
        case 1_000_000: value = B1000000
        case 1_152_000: value = B1152000
        case 1_500_000: value = B1500000
        case 2_000_000: value = B2000000
        case 2_500_000: value = B2500000
        case 3_000_000: value = B3000000
        case 3_500_000: value = B3500000
        case 4_000_000: value = B4000000
        default: return nil
        }
        return speed_t(value)
    }

    /// The canonical string; `parse(description)` gives back the same value.
    public var description: String {
        switch self {
        case .hciUser(let index): return "hci\(index)"
        case .hciRaw(let index): return "hci-raw:\(index)"
        case .tcp(let host, let port): return host.unicodeScalars.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        case .serial(let path, let baud, let rtscts): return "serial:\(path)@\(baud)" + (rtscts ? ",rtscts" : "")
        case .pty: return "pty"
        case .replay(let path): return "replay:\(path)"
        }
    }

    /// Parses a spec string; a malformed one throws `.invalidSpec` saying what is wrong.
    public static func parse(_ s: String) throws(TransportError) -> TransportSpec {
        func invalid(_ reason: String) -> TransportError { .invalidSpec(s, reason: reason) }
        guard !s.isEmpty else { throw invalid("empty transport") }
        guard let (scheme, rest) = s.split(atFirst: ":") else {
            if s == "pty" { return .pty }
            if s.hasPrefix("hci") {
                let digits = s.dropFirst(3)
                if digits.isEmpty { throw invalid("missing adapter index (hci0, hci1, ...)") }
                return .hciUser(index: try index(String(digits), invalid))
            }
            if ["tcp", "unix", "serial", "replay", "hci-user", "hci-raw"].contains(s) {
                throw invalid("\(s) needs an argument after \"\(s):\"")
            }
            throw invalid("unknown transport \"\(s)\"")
        }
        switch scheme {
        case "hci-user", "hci-raw":
            if rest.isEmpty { throw invalid("missing adapter index after \"\(scheme):\"") }
            let n = try index(rest, invalid)
            return scheme == "hci-user" ? .hciUser(index: n) : .hciRaw(index: n)
        case "tcp":
            return try tcp(rest, invalid)
        case "unix":
            if rest.isEmpty { throw invalid("missing socket path after \"unix:\"") }
            let limit = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
            if rest.utf8.count > limit {
                throw invalid("socket path is \(rest.utf8.count) bytes, a unix socket address holds at most \(limit)")
            }
            return .unix(path: rest)
        case "serial":
            return try serial(rest, invalid)
        case "pty":
            throw invalid("pty takes no argument; the slave path is chosen by the kernel and printed on open")
        case "replay":
            if rest.isEmpty { throw invalid("missing capture file after \"replay:\"") }
            return .replay(path: rest)
        default:
            throw invalid("unknown transport \"\(scheme)\"")
        }
    }

    private static func index(_ text: String, _ invalid: (String) -> TransportError) throws(TransportError) -> Int {
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(text) else {
            throw invalid("adapter index \"\(text)\" is not a number")
        }
        guard n < 0xFFFF else { throw invalid("adapter index \(n) is out of range 0-65534") }
        return n
    }

    private static func tcp(_ rest: String, _ invalid: (String) -> TransportError) throws(TransportError) -> TransportSpec {
        let host: String
        let portText: String
        if rest.unicodeScalars.first == "[" {
            guard let (inside, after) = String(Substring(rest.unicodeScalars.dropFirst())).split(atFirst: "]") else {
                throw invalid("missing \"]\" after the IPv6 address")
            }
            guard after.unicodeScalars.first == ":" else { throw invalid("missing port (tcp:[ADDRESS]:PORT)") }
            host = inside
            portText = String(Substring(after.unicodeScalars.dropFirst()))
        } else {
            guard let (before, after) = rest.split(atLast: ":") else { throw invalid("missing port (tcp:HOST:PORT)") }
            host = before
            portText = after
            if host.unicodeScalars.contains(":") { throw invalid("an IPv6 address goes in brackets: tcp:[\(host)]:\(portText)") }
        }
        if host.isEmpty { throw invalid("missing host (tcp:HOST:PORT)") }
        if host.unicodeScalars.contains(where: { $0 == "[" || $0 == "]" }) { throw invalid("\"[\" and \"]\" only enclose an IPv6 address (tcp:[ADDRESS]:PORT)") }
        if portText.isEmpty { throw invalid("missing port (tcp:HOST:PORT)") }
        guard portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), portText.utf8.count <= 9, let port = Int(portText) else {
            throw invalid("port \"\(portText)\" is not a number")
        }
        guard (1...65535).contains(port) else { throw invalid("port \(port) is out of range 1-65535") }
        return .tcp(host: host, port: UInt16(port))
    }

    private static func serial(_ rest: String, _ invalid: (String) -> TransportError) throws(TransportError) -> TransportSpec {
        var parts = rest.unicodeScalars.split(separator: ",", omittingEmptySubsequences: false).map { String(Substring($0)) }
        let main = parts.removeFirst()
        var rtscts = false
        for option in parts {
            guard option == "rtscts" else { throw invalid("unknown serial option \"\(option)\" (the only option is rtscts)") }
            rtscts = true
        }
        var path = main
        var baud = defaultBaud
        if let (before, text) = main.split(atLast: "@") {
            path = before
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), text.utf8.count <= 9, let n = Int(text) else {
                throw invalid("baud rate \"\(text)\" is not a number")
            }
            guard speed(forBaud: n) != nil else {
                throw invalid("baud rate \(n) is not a standard rate (\(standardBauds.map(String.init).joined(separator: ", ")))")
            }
            baud = n
        }
        if path.isEmpty { throw invalid("missing device path (serial:/dev/ttyUSB0)") }
        return .serial(path: path, baud: baud, rtscts: rtscts)
    }

    /// Opens the transport (not started yet).
    public func open() throws(TransportError) -> any HCITransport {
        switch self {
        case .hciUser(let index): return try HCISocketTransport(index: index, channel: .user)
        case .hciRaw(let index): return try HCISocketTransport(index: index, channel: .raw)
        case .tcp(let host, let port): return try StreamTransport.connect(host: host, port: port)
        case .unix(let path): return try StreamTransport.connect(unixPath: path)
        case .serial(let path, let baud, let rtscts): return try StreamTransport.openSerial(path: path, baud: baud, rtscts: rtscts)
        case .pty: return try StreamTransport.openPTY()
        case .replay(let path): return try ReplayTransport(path: path)
        }
    }
}

extension String {
    /// The text before and after the first `separator`, found scalar by scalar: a mark that
    /// joins the separator into one Character (U+070F before "@") does not hide it.
    fileprivate func split(atFirst separator: Unicode.Scalar) -> (String, String)? {
        unicodeScalars.firstIndex(of: separator).map(split(at:))
    }

    /// The text before and after the last `separator`, found scalar by scalar.
    fileprivate func split(atLast separator: Unicode.Scalar) -> (String, String)? {
        unicodeScalars.lastIndex(of: separator).map(split(at:))
    }

    private func split(at i: String.Index) -> (String, String) {
        (String(Substring(unicodeScalars[..<i])), String(Substring(unicodeScalars[unicodeScalars.index(after: i)...])))
    }
}
