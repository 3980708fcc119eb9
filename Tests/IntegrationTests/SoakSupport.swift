import Foundation
import BLETestSupport
import BLEWire
import GATTClient

/// What this process holds, from /proc/self (proc(5)): open file descriptors, threads and
/// resident memory.
struct ProcessResources: CustomStringConvertible {
    var openFDs: Int
    var threads: Int
    /// Resident set size in bytes (/proc/self/statm field 2 x page size).
    var residentBytes: Int

    static func now() -> ProcessResources {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        var threads = -1
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
                threads = Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? -1
            }
        }
        var resident = -1
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Int(fields[1]) { resident = pages * Int(sysconf(Int32(_SC_PAGESIZE))) }
        }
        return ProcessResources(openFDs: fds, threads: threads, residentBytes: resident)
    }

    /// The reading the end is compared with. Dispatch opens a timer descriptor for each clock
    /// on its first use, and `settled` sleeps on the continuous clock: one sleep first, so
    /// that descriptor is already counted here rather than taken for a leak at the end.
    static func baseline() async -> ProcessResources {
        try? await Task.sleep(for: .milliseconds(1))
        return now()
    }

    /// A reading taken once the process has gone idle: dispatch keeps worker threads that a
    /// burst of work started for a few seconds before it lets them go, so this waits (at most
    /// `limit`) until the thread count is back within `Soak.threadBand` above `baseline`
    /// (fewer threads than at the start is not a leak).
    static func settled(toward baseline: ProcessResources, limit: Duration = .seconds(20)) async -> ProcessResources {
        let deadline = ContinuousClock.now + limit
        var reading = now()
        while reading.threads - baseline.threads > Soak.threadBand, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(250))
            reading = now()
        }
        return reading
    }

    /// Open sockets (the stack's transports; a radio's own descriptors are pipes).
    static func openSockets() -> Int { openFDTargets().filter { $0.contains("socket:") }.count }

    /// What each open descriptor refers to (for messages when counts differ).
    static func openFDTargets() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.map { name in
            "\(name)->" + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) ?? "?")
        }
    }

    var description: String {
        "fds \(openFDs), threads \(threads), RSS \(String(format: "%.1f", Double(residentBytes) / 1_048_576)) MiB"
    }
}

enum Soak {
    /// A cycle count from the environment, or `fallback`.
    static func cycles(_ variable: String, default fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[variable].flatMap { Int($0) }.map { max(1, $0) } ?? fallback
    }

    /// uint32 little-endian (the lab counter's format).
    static func counter(_ n: UInt32) -> [UInt8] { [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 24)] }

    /// The lab service and its notifying counter (Fixtures/peers/scenarios/lab.json).
    static let labService = ServiceIdentifier(uuid: BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!)
    static let labCounter = CharacteristicIdentifier(uuid: BluetoothUUID("6E400006-B5A3-F393-E0A9-E50E24DCCA9E")!, service: labService)

    /// Whether the Bumble radio can run here (a Python with Bumble is configured or in .venv).
    static var radioAvailable: Bool {
        if let p = ProcessInfo.processInfo.environment["BLE_PYTHON"], !p.isEmpty { return FileManager.default.isExecutableFile(atPath: p) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return FileManager.default.isExecutableFile(atPath: root.appendingPathComponent(".venv/bin/python").path)
    }

    /// Resident memory may grow by at most this much over a run (allocator and runtime noise:
    /// arenas, dispatch caches, test-framework records).
    static let residentBand = 4 * 1_048_576
    /// Threads may differ by this many (dispatch's worker pool grows and shrinks on its own).
    static let threadBand = 2
}
