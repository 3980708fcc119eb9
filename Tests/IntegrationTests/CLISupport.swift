import BLETestSupport
import Foundation
import Testing

/// Runs the built `ble` executable as a user would, capturing its output and exit status.
enum BLETool {
    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
        var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    /// The package root, from this file's path (Tests/IntegrationTests/CLISupport.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `ble` next to the test bundle (same build configuration), else .build/debug/ble.
    static var executable: URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("ble"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("ble"),
            packageRoot.appendingPathComponent(".build/debug/ble"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[2]
    }

    static func fixture(_ path: String) -> URL { packageRoot.appendingPathComponent("Fixtures").appendingPathComponent(path) }

    /// Runs `ble arguments`, killing it after `timeout` seconds (its status is then 128 + 9).
    static func run(_ arguments: [String], timeout: Double = 60, environment extra: [String: String] = [:]) async throws -> Run {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "BLE_DEVICE")
        env.removeValue(forKey: "BLE_LOG")
        env["NO_COLOR"] = "1"
        for (k, v) in extra { env[k] = v }
        let bonds = try isolateBonds(arguments, &env)
        defer { bonds.map { try? FileManager.default.removeItem(at: $0) } }
        let cache = isolateGATTCache(&env)
        defer { cache.map { try? FileManager.default.removeItem(at: $0) } }
        let run = try await Subprocess.run(executable, arguments, environment: env, killAfter: .milliseconds(Int64(timeout * 1000)))
        return Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }

    /// A run that names no bond directory gets a fresh empty one (removed afterwards), so a
    /// bond one test makes never reaches another test or the user's own store.
    private static func isolateBonds(_ arguments: [String], _ env: inout [String: String]) throws -> URL? {
        guard !arguments.contains("--bond-dir"), env["BLE_BOND_DIR"] == nil || env["BLE_BOND_DIR"] == ProcessInfo.processInfo.environment["BLE_BOND_DIR"] else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        env["BLE_BOND_DIR"] = dir.path
        return dir
    }

    /// A run that names no GATT cache directory gets a fresh one (not created; removed
    /// afterwards), so no test reads another's cache or writes to the user's.
    private static func isolateGATTCache(_ env: inout [String: String]) -> URL? {
        guard env["BLE_GATT_CACHE_DIR"] == nil || env["BLE_GATT_CACHE_DIR"] == ProcessInfo.processInfo.environment["BLE_GATT_CACHE_DIR"] else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-cache-\(UUID().uuidString)")
        env["BLE_GATT_CACHE_DIR"] = dir.path
        return dir
    }

    /// Runs `ble arguments` and sends it SIGINT (Ctrl-C) once its stdout satisfies `ready`.
    /// Bounded by the tool itself (its connect and scan steps time out, ending the output)
    /// and by `timeout` seconds, after which it is killed (its status is then 128 + 9).
    static func interrupt(_ arguments: [String], timeout: Double = 60, when ready: @escaping (String) -> Bool) async throws -> Run {
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        let bonds = try isolateBonds(arguments, &env)
        defer { bonds.map { try? FileManager.default.removeItem(at: $0) } }
        let cache = isolateGATTCache(&env)
        defer { cache.map { try? FileManager.default.removeItem(at: $0) } }
        let process = try ChildProcess(path: executable.path, arguments, environment: env, stdout: .pipe, stderr: .secondPipe)
        let exit = Task { await process.exitStatus(killingAfter: .milliseconds(Int64(timeout * 1000))) }
        defer { exit.cancel() }
        let (errors, errorFeed) = AsyncStream<[UInt8]>.makeStream()
        PipeReader.start(process.secondPipe ?? -1) { errorFeed.yield($0) } end: { errorFeed.finish() }
        let (outputs, outputFeed) = AsyncStream<[UInt8]>.makeStream()
        PipeReader.start(process.pipe ?? -1) { outputFeed.yield($0) } end: { outputFeed.finish() }
        var text = ""
        var iterator = outputs.makeAsyncIterator()
        while let chunk = await iterator.next() {
            text += String(decoding: chunk, as: UTF8.self)
            if ready(text) { break }
        }
        kill(process.pid, SIGINT)
        while let chunk = await iterator.next() { text += String(decoding: chunk, as: UTF8.self) }
        let status = await exit.value
        var stderr: [UInt8] = []
        for await chunk in errors { stderr += chunk }
        return Run(status: status, stdout: text, stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Each stdout line parsed as a JSON object.
    static func jsonLines(_ run: Run) throws -> [[String: Any]] {
        try run.stdoutLines.map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not a JSON object: \(line)")
        }
    }
}
