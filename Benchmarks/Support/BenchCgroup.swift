import Foundation

/// A control group that emulates a small board: a CPU quota (a share of one core) and a memory
/// limit. cgroup v2 (`cpu.max`, `memory.max`) where the unified hierarchy has those
/// controllers, else v1's equivalents (`cpu.cfs_quota_us` over `cpu.cfs_period_us`,
/// `memory.limit_in_bytes`). Needs root and a writable /sys/fs/cgroup; `make()` says why not.
///
///     let group = try BenchCgroup.make(name: "ble-bench", cpuShare: 0.2, memoryBytes: 64 << 20)
///     ChildProcess(path: "/bin/sh", BenchCgroup.wrapper + group.procsFiles + ["--", ble, ...])
final class BenchCgroup: Sendable {
    /// The group's directories (one for v2; cpu and memory for v1).
    let directories: [String]
    let memoryBytes: Int
    let isV2: Bool

    private init(directories: [String], memoryBytes: Int, isV2: Bool, cpuShare: Double) {
        cpuShareText = cpuShare == 0.2 ? "1/5" : "\(cpuShare)"
        self.directories = directories
        self.memoryBytes = memoryBytes
        self.isV2 = isV2
    }

    static func make(name: String, cpuShare: Double, memoryBytes: Int) throws -> BenchCgroup {
        let period = 100_000
        let quota = Int(Double(period) * cpuShare)
        let unified = "/sys/fs/cgroup"
        if let controllers = try? String(contentsOfFile: unified + "/cgroup.controllers", encoding: .utf8),
           controllers.contains("cpu"), controllers.contains("memory") {
            let dir = unified + "/" + name
            try create(dir)
            try write("\(quota) \(period)", to: dir + "/cpu.max")
            try write("\(memoryBytes)", to: dir + "/memory.max")
            try? write("0", to: dir + "/memory.swap.max")
            return BenchCgroup(directories: [dir], memoryBytes: memoryBytes, isV2: true, cpuShare: cpuShare)
        }
        let cpu = unified + "/cpu/" + name, memory = unified + "/memory/" + name
        try create(cpu)
        try create(memory)
        try write("\(period)", to: cpu + "/cpu.cfs_period_us")
        try write("\(quota)", to: cpu + "/cpu.cfs_quota_us")
        try write("\(memoryBytes)", to: memory + "/memory.limit_in_bytes")
        return BenchCgroup(directories: [cpu, memory], memoryBytes: memoryBytes, isV2: false, cpuShare: cpuShare)
    }

    /// "1/5 of a core, 64 MiB" for the row's name.
    var describe: String { "a CPU quota of \(cpuShareText) of a core and \(memoryBytes >> 20) MiB of memory (cgroup \(isV2 ? "v2" : "v1"))" }
    let cpuShareText: String

    /// `sh -c` arguments that put the shell into the groups named after them (up to "--"),
    /// then exec the rest: the program runs inside the limits from its first instruction.
    static let wrapper = ["-c", #"while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@""#, "sh"]
    var procsFiles: [String] { directories.map { $0 + "/cgroup.procs" } }

    /// The group's peak memory (v2 `memory.peak` where the kernel has it, v1 `memory.max_usage_in_bytes`).
    var peakMemoryBytes: Double {
        let file = isV2 ? directories[0] + "/memory.peak" : directories[1] + "/memory.max_usage_in_bytes"
        return (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? .nan
    }

    /// Times the memory limit was hit (v2 `memory.events` max, v1 `memory.failcnt`).
    var limitHits: Double {
        if isV2 {
            let events = (try? String(contentsOfFile: directories[0] + "/memory.events", encoding: .utf8)) ?? ""
            let line = events.split(separator: "\n").first { $0.hasPrefix("max ") }
            return line.flatMap { Double($0.dropFirst(4)) } ?? .nan
        }
        return (try? String(contentsOfFile: directories[1] + "/memory.failcnt", encoding: .utf8)).flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? .nan
    }

    /// CPU time the quota held the group back (cpu.stat: throttled_usec, v1 throttled_time in ns), in seconds.
    var throttledSeconds: Double {
        let stat = (try? String(contentsOfFile: directories[0] + "/cpu.stat", encoding: .utf8)) ?? ""
        for line in stat.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 2, let v = Double(f[1]) else { continue }
            if isV2 && f[0] == "throttled_usec" { return v / 1e6 }
            if !isV2 && f[0] == "throttled_time" { return v / 1e9 }
        }
        return .nan
    }

    /// Removes the groups (their processes must have ended).
    func remove() { for dir in directories.reversed() { rmdir(dir) } }

    private static func create(_ dir: String) throws {
        if mkdir(dir, 0o755) != 0 && errno != EEXIST {
            throw BenchError("cannot create the control group \(dir): \(String(cString: strerror(errno))) (needs root and a writable cgroup hierarchy)")
        }
    }

    private static func write(_ value: String, to file: String) throws {
        do { try value.write(toFile: file, atomically: false, encoding: .utf8) } catch {
            throw BenchError("cannot write \(value) to \(file): \(error)")
        }
    }
}
