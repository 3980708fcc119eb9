import Foundation

/// Runs a program to completion with its output captured in files (so a chatty child never
/// blocks on a full pipe), killed with SIGKILL if it outlives `killAfter`.
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

    struct StartFailure: Error, CustomStringConvertible {
        var path: String
        var error: any Error
        var description: String { "cannot start \(path): \(error)" }
    }

    static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil,
                    environment: [String: String]? = nil, killAfter limit: Duration) async throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stdoutURL = scratch.appendingPathComponent("stdout")
        let stderrURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let stdoutFile = try FileHandle(forWritingTo: stdoutURL)
        let stderrFile = try FileHandle(forWritingTo: stderrURL)
        defer {
            try? stdoutFile.close()
            try? stderrFile.close()
        }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdoutFile
        process.standardError = stderrFile
        let (exits, exited) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { finished in
            exited.yield(finished.terminationStatus)
            exited.finish()
        }
        let start = ContinuousClock.now
        do {
            try process.run()
        } catch {
            throw StartFailure(path: executable.path, error: error)
        }
        let pid = process.processIdentifier
        // The watchdog holds the pid only and is cancelled as soon as the child has exited.
        let watchdog = Task {
            try await Task.sleep(for: limit)
            kill(pid, SIGKILL)
        }
        var status: Int32 = -1
        for await code in exits { status = code }
        watchdog.cancel()
        return Result(
            status: status,
            stdout: (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "",
            elapsed: ContinuousClock.now - start,
            killed: status == SIGKILL && process.terminationReason == .uncaughtSignal)
    }
}
