import BLETestSupport
import CHCI
import Foundation
import Testing

/// `ble` running while the test watches and drives it: stdout and stderr are read as the tool
/// writes them, and stdin is a pseudo-terminal of the test's own (as when a person runs it:
/// the test types into the other end), a pipe the test writes, or /dev/null. The terminal's
/// settings can be read after the tool ended (was it left as it was found?).
///
///     let session = try TerminalSession(["pair", device, "--io", "keyboard-only"])
///     _ = await session.stderr(until: "passkey shown on")
///     session.type(Array("123456\r".utf8))
///     let run = await session.finish()
final class TerminalSession {
    enum Input { case terminal, pipe, none }

    let process = Process()
    /// The test's end of stdin (the terminal's master side, or the pipe's write end).
    private var input: Int32
    /// The tool's end of the terminal, -1 without one.
    let terminal: Int32
    private var outputs: AsyncStream<Data>.Iterator
    private var errors: AsyncStream<Data>.Iterator
    private let exits: AsyncStream<Int32>
    private let out = Pipe(), err = Pipe()
    private(set) var stdoutText = ""
    private(set) var stderrText = ""

    struct TerminalError: Error, CustomStringConvertible {
        var step: String
        var errno: Int32
        var description: String { "\(step) failed: errno \(errno)" }
    }

    init(_ arguments: [String], stdin: Input = .terminal) throws {
        switch stdin {
        case .terminal:
            var path = [CChar](repeating: 0, count: 64)
            var slave: Int32 = -1
            input = chci_open_pty(&path, path.count, &slave)
            guard input >= 0 else { throw TerminalError(step: "opening a pseudo-terminal", errno: errno) }
            terminal = slave
            // The shim leaves it raw (for H4); a person's terminal is in line mode with echo.
            var t = termios()
            guard tcgetattr(slave, &t) == 0 else { throw TerminalError(step: "reading the terminal's settings", errno: errno) }
            t.c_iflag |= tcflag_t(ICRNL)
            t.c_oflag |= tcflag_t(OPOST | ONLCR)
            t.c_lflag |= tcflag_t(ICANON | ECHO | ECHOE | ECHOK | ISIG | IEXTEN)
            guard tcsetattr(slave, TCSANOW, &t) == 0 else { throw TerminalError(step: "setting line mode", errno: errno) }
            process.standardInput = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        case .pipe:
            let pipe = Pipe()
            input = dup(pipe.fileHandleForWriting.fileDescriptor)
            terminal = -1
            process.standardInput = pipe
        case .none:
            input = -1
            terminal = -1
            process.standardInput = FileHandle.nullDevice
        }
        process.executableURL = BLETool.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "BLE_DEVICE")
        env.removeValue(forKey: "BLE_LOG")
        env["NO_COLOR"] = "1"
        process.environment = env
        process.standardOutput = out
        process.standardError = err
        let (exits, exited) = AsyncStream<Int32>.makeStream()
        self.exits = exits
        process.terminationHandler = { exited.yield($0.terminationStatus); exited.finish() }
        try process.run()
        outputs = PipeReader.chunks(taking: out.fileHandleForReading).makeAsyncIterator()
        errors = PipeReader.chunks(taking: err.fileHandleForReading).makeAsyncIterator()
        if case .pipe = stdin { try? (process.standardInput as? Pipe)?.fileHandleForWriting.close() }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        if input >= 0 { close(input) }
        if terminal >= 0 { close(terminal) }
    }

    /// Everything on stderr so far, once it satisfies `done` (or stderr ended).
    @discardableResult
    func stderr(until done: (String) -> Bool) async -> String {
        while !done(stderrText), let chunk = await errors.next() { stderrText += String(decoding: chunk, as: UTF8.self) }
        return stderrText
    }

    /// Everything on stderr so far, once it contains `text` (or stderr ended).
    @discardableResult
    func stderr(until text: String) async -> String { await stderr { $0.contains(text) } }

    /// Everything on stdout so far, once it satisfies `done` (or stdout ended).
    @discardableResult
    func stdout(until done: (String) -> Bool) async -> String {
        while !done(stdoutText), let chunk = await outputs.next() { stdoutText += String(decoding: chunk, as: UTF8.self) }
        return stdoutText
    }

    /// Types `keys` on the terminal (or writes them to the pipe).
    func type(_ keys: [UInt8]) {
        _ = keys.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// Ends stdin (a pipe's end of file).
    func closeInput() {
        guard terminal < 0, input >= 0 else { return }
        close(input)
        input = -1
    }

    /// Ctrl-C, as the terminal's driver delivers it to the foreground program.
    func interrupt() { kill(process.processIdentifier, SIGINT) }

    /// The exit status, and all of stdout and stderr, once the tool ended.
    func finish() async -> BLETool.Run {
        var statuses = exits.makeAsyncIterator()
        let status = await statuses.next() ?? -1
        await stdout { _ in false }
        await stderr { _ in false }
        return BLETool.Run(status: status, stdout: stdoutText, stderr: stderrText)
    }

    /// The terminal's local modes now (ICANON, ECHO, ISIG...).
    var localModes: tcflag_t {
        var t = termios()
        _ = tcgetattr(terminal, &t)
        return t.c_lflag
    }
}
