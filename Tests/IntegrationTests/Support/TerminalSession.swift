import BLETestSupport
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

    let process: ChildProcess
    /// The test's end of stdin (the terminal's master side, or the pipe's write end), -1
    /// once closed or without one.
    private var input: Int32
    /// True when stdin is the pseudo-terminal.
    private let onTerminal: Bool
    private var outputs: AsyncStream<Data>.Iterator
    private var errors: AsyncStream<Data>.Iterator
    /// The exit status; the tool is killed if it runs 2 minutes, or once the session is gone.
    private let exit: Task<Int32, Never>
    private(set) var stdoutText = ""
    private(set) var stderrText = ""

    init(_ arguments: [String], stdin: Input = .terminal) throws {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "BLE_DEVICE")
        env.removeValue(forKey: "BLE_LOG")
        env["NO_COLOR"] = "1"
        // A new pseudo-terminal starts in line mode with echo, as a person's does.
        let input: ChildProcess.Input = switch stdin {
        case .terminal: .terminal
        case .pipe: .pipe
        case .none: .null
        }
        let process = try ChildProcess(path: BLETool.executable.path, arguments, environment: env, stdin: input, stdout: .pipe, stderr: .secondPipe)
        self.process = process
        self.input = process.input ?? -1
        onTerminal = stdin == .terminal
        exit = Task { await process.exitStatus(killingAfter: .seconds(120)) }
        outputs = Self.chunks(process.pipe)
        errors = Self.chunks(process.secondPipe)
    }

    private static func chunks(_ fd: Int32?) -> AsyncStream<Data>.Iterator {
        let (stream, feed) = AsyncStream<Data>.makeStream()
        PipeReader.start(fd ?? -1) { feed.yield(Data($0)) } end: { feed.finish() }
        return stream.makeAsyncIterator()
    }

    deinit {
        exit.cancel()
        if input >= 0 { close(input) }
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

    /// Types `keys` on the terminal (or writes them to the pipe); a failure is recorded.
    func type(_ keys: [UInt8]) {
        do { try process.send(keys) } catch { Issue.record("typing on the tool's stdin: \(error)") }
    }

    /// Ends stdin (a pipe's end of file).
    func closeInput() {
        guard !onTerminal, input >= 0 else { return }
        close(input)
        input = -1
    }

    /// Ctrl-C, as the terminal's driver delivers it to the foreground program.
    func interrupt() { kill(process.pid, SIGINT) }

    /// The exit status, and all of stdout and stderr, once the tool ended.
    func finish() async -> BLETool.Run {
        let status = await exit.value
        await stdout { _ in false }
        await stderr { _ in false }
        return BLETool.Run(status: status, stdout: stdoutText, stderr: stderrText)
    }

    /// The terminal's local modes now (ICANON, ECHO, ISIG...), read on its master side.
    var localModes: tcflag_t {
        var t = termios()
        _ = tcgetattr(onTerminal ? input : -1, &t)
        return t.c_lflag
    }
}
