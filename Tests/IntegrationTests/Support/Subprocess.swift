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
        let status = await process.exitStatus(killingAfter: limit)
        let elapsed = ContinuousClock.now - start
        return Result(
            status: status,
            stdout: (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "",
            elapsed: elapsed,
            killed: status == 128 + SIGKILL && elapsed >= limit)
    }
}
