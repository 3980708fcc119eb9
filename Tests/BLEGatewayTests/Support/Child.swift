import BLETestSupport
import Foundation

/// A child process started with a clean signal state (`ChildProcess`, which says why).
/// Its stderr comes back as a stream of text; stdout goes to /dev/null or to a file.
///
///     let child = try Child(path: "/usr/sbin/mosquitto", ["-p", "1883"])
///     for await text in child.stderr { ... }
final class Child: Sendable {
    let pid: pid_t
    /// Text the child writes to stderr, as it arrives.
    let stderr: AsyncStream<String>
    /// The exit status (or 128 + signal), once.
    let exit: AsyncStream<Int32>

    init(path: String, _ arguments: [String], stdout: ChildProcess.Output = .null) throws {
        let process = try ChildProcess(path: path, arguments, stdout: stdout, stderr: .pipe)
        pid = process.pid
        let (text, feed) = AsyncStream<String>.makeStream()
        stderr = text
        PipeReader.start(process.pipe ?? -1) { feed.yield(String(decoding: $0, as: UTF8.self)) } end: { feed.finish() }
        let (exits, exited) = AsyncStream<Int32>.makeStream()
        exit = exits
        Task {
            exited.yield(await process.exitStatus())
            exited.finish()
        }
    }

    func signal(_ s: Int32) { _ = kill(pid, s) }

    /// Waits for the exit status, sending SIGKILL after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32 {
        let pid = self.pid
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        var code: Int32 = -1
        for await c in exit { code = c }
        watchdog.cancel()
        return code
    }

    /// Collects stderr until `done` says the text so far is enough or the stream ends; ""
    /// when `timeout` passes first.
    static func read(_ stream: AsyncStream<String>, timeout: Duration, until done: @escaping @Sendable (String) -> Bool) async -> String {
        let reader = Task {
            var text = ""
            for await chunk in stream {
                text += chunk
                if done(text) { break }
            }
            return text
        }
        let (seconds, attoseconds) = timeout.components
        guard let text = await outcome(of: reader, within: Double(seconds) + Double(attoseconds) * 1e-18) else {
            reader.cancel()
            return ""
        }
        return text.get()
    }
}
