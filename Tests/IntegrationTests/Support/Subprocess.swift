import BLETestSupport
import Foundation

/// Runs a program to completion as a `ChildProcess`, with its output captured in files (so a
/// chatty child never blocks on a full pipe), killed with SIGKILL if it outlives `killAfter`
/// (its status is then 128 + 9).
///
///     let run = try await Subprocess.run(URL(fileURLWithPath: "/bin/true"), [], killAfter: .seconds(5))
enum Subprocess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Wall time from start to exit.
        var elapsed: Duration
        /// True when the watchdog killed it.
        var killed: Bool
    }

    static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil,
                    environment: [String: String]? = nil, killAfter limit: Duration) async throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stdoutURL = scratch.appendingPathComponent("stdout")
        let stderrURL = scratch.appendingPathComponent("stderr")
        let start = ContinuousClock.now
        // coreutils' env changes into `directory` and executes the program.
        let (path, argv) = directory.map { ("/usr/bin/env", ["--chdir=\($0.path)", executable.path] + arguments) } ?? (executable.path, arguments)
        let process = try ChildProcess(path: path, argv, environment: environment, stdout: .file(stdoutURL.path), stderr: .file(stderrURL.path))
        let pid = process.pid
        // The watchdog holds the pid only and is cancelled as soon as the child has exited.
        let watchdog = Task { () -> Bool in
            do { try await Task.sleep(for: limit) } catch { return false }
            kill(pid, SIGKILL)
            return true
        }
        let status = await process.exitStatus()
        watchdog.cancel()
        let killed = await watchdog.value && status == 128 + SIGKILL
        return Result(
            status: status,
            stdout: (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "",
            elapsed: ContinuousClock.now - start,
            killed: killed)
    }
}
