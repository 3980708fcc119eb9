#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// Where the tool writes: data to stdout, status and errors to stderr. Colour only when the
/// stream is a terminal and NO_COLOR is not set.
struct Console: Sendable {
    let stdoutIsTTY: Bool
    let stderrIsTTY: Bool
    let colour: Bool

    init(environment: [String: String]) {
        stdoutIsTTY = isatty(1) == 1
        stderrIsTTY = isatty(2) == 1
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        colour = stdoutIsTTY && !noColor && environment["TERM"] != "dumb"
    }

    /// One line of data on stdout.
    func out(_ line: String) { Console.write(1, line + "\n") }
    /// Raw text on stdout (the live table).
    func raw(_ text: String) { Console.write(1, text) }
    /// One status line on stderr.
    func status(_ line: String) { Console.write(2, line + "\n") }
    /// Text on stderr without a line end: a prompt, or the echo of what is typed after it.
    func prompt(_ text: String) { Console.write(2, text) }
    /// An error line: "ble: <text>".
    func error(_ text: String) { Console.write(2, "ble: \(text)\n") }

    /// Columns of the terminal on stdout (TIOCGWINSZ), else $COLUMNS, else 120.
    func terminalWidth(environment: [String: String]) -> Int {
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? 120
    }

    /// Wraps `text` in an SGR colour when colour is on.
    func paint(_ text: String, _ sgr: String) -> String {
        colour ? "\u{1B}[\(sgr)m\(text)\u{1B}[0m" : text
    }

    /// Bytes as they are on stdout (`ble read --raw`).
    func bytes(_ data: [UInt8]) { Console.write(1, data) }

    static func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    static func write(_ fd: Int32, _ data: [UInt8]) {
        do {
            try FileDescriptorIO.writeAll(fd, data)
        } catch where error.errno == EPIPE && fd == 1 {
            // The reader of stdout went away (`ble scan | head -3`): stop like a tool
            // killed by SIGPIPE would (status 128 + 13), instead of scanning on unread.
            exit(141)
        } catch {
            // Another failure of the console: nothing is left to report it on.
        }
    }
}
