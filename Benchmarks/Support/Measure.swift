import Foundation

/// One measured workload: operations per second (the median run), CPU figures in `extra`.
struct Measurement: Codable {
    var name: String
    var operations: Int
    var seconds: Double
    var operationsPerSecond: Double
    var extra: [String: Double] = [:]
}

/// CPU time from clock_gettime(2), in seconds: every thread of this process, or the calling
/// thread alone. Unlike the wall clock it does not count the time other processes ran, so
/// it is the figure to compare on a shared machine.
enum CPUTime {
    static func process() -> Double { seconds(CLOCK_PROCESS_CPUTIME_ID) }
    static func thread() -> Double { seconds(CLOCK_THREAD_CPUTIME_ID) }

    private static func seconds(_ clock: clockid_t) -> Double {
        var t = timespec()
        clock_gettime(clock, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// The runs of one workload: wall time, process CPU time and (for runs on one thread) the
/// calling thread's CPU time of each; `measurement` gives their medians and the spread.
///
///     var times = RunTimes()
///     for _ in 0..<runs { let mark = RunTimes.start(); try await work(); times.record(since: mark) }
///     let m = times.measurement(name, operations: n)
struct RunTimes {
    struct Mark {
        var wall: UInt64
        var cpu: Double
        var thread: Double?
    }
    private(set) var wall: [Double] = [], cpu: [Double] = [], threadCPU: [Double] = []

    /// `onThisThread`: the run stays on the calling thread (no suspension), so its thread
    /// CPU time is recorded too.
    static func start(onThisThread: Bool = false) -> Mark {
        Mark(wall: DispatchTime.now().uptimeNanoseconds, cpu: CPUTime.process(), thread: onThisThread ? CPUTime.thread() : nil)
    }

    mutating func record(since mark: Mark) {
        if let thread = mark.thread { threadCPU.append(CPUTime.thread() - thread) }
        cpu.append(CPUTime.process() - mark.cpu)
        wall.append(Double(DispatchTime.now().uptimeNanoseconds - mark.wall) / 1e9)
    }

    static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The median run's rate; in `extra`: process CPU nanoseconds per operation (median,
    /// fewest, most), the calling thread's (median) when recorded, the best run's rate and
    /// the number of runs.
    func measurement(_ name: String, operations: Int) -> Measurement {
        let seconds = Self.median(wall)
        var m = Measurement(name: name, operations: operations, seconds: seconds, operationsPerSecond: Double(operations) / seconds)
        let perOperation = cpu.map { $0 * 1e9 / Double(operations) }
        m.extra = [
            "cpuNanosecondsPerOperation": Self.median(perOperation),
            "cpuNanosecondsPerOperationMin": perOperation.min() ?? .nan,
            "cpuNanosecondsPerOperationMax": perOperation.max() ?? .nan,
            "bestOperationsPerSecond": Double(operations) / (wall.min() ?? .nan),
            "runs": Double(wall.count),
        ]
        if !threadCPU.isEmpty { m.extra["threadCPUNanosecondsPerOperation"] = Self.median(threadCPU) * 1e9 / Double(operations) }
        return m
    }
}

/// Runs `body` (which performs `operations` operations on this thread) `runs` times: the
/// median run's rate, CPU time per operation as `RunTimes` gives it.
func measure(_ name: String, operations: Int, runs: Int = 5, _ body: () throws -> Void) rethrows -> Measurement {
    var times = RunTimes()
    for _ in 0..<runs {
        let mark = RunTimes.start(onThisThread: true)
        try body()
        times.record(since: mark)
    }
    return times.measurement(name, operations: operations)
}

/// The CPU model and core count, for the report.
func machineDescription() -> [String: String] {
    var model = "unknown"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
       let value = line.split(separator: ":", maxSplits: 1).last {
        model = value.trimmingCharacters(in: .whitespaces)
    }
    var load = "unknown"
    if let l = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) {
        load = l.split(separator: " ").prefix(3).joined(separator: " ")
    }
    return ["loadAverage": load, "cpu": model, "cores": "\(ProcessInfo.processInfo.activeProcessorCount)", "os": ProcessInfo.processInfo.operatingSystemVersionString]
}

/// Runs the Bumble side of a workload on the same bytes and returns its operations per second.
func runBumble(python: String, workload: String, input: URL, iterations: Int) -> Double? {
    runPeerScript(python: python, script: "bumble_bench.py", arguments: [workload, input.path, String(iterations)])
}

/// Runs the Bumble side of a workload and returns every number of the JSON object it prints
/// (`operationsPerSecond` and any figures beside it), or nil when it fails.
func runBumbleFigures(python: String, workload: String, input: URL, iterations: Int) -> [String: Double]? {
    runPeerScriptFigures(python: python, script: "bumble_bench.py", arguments: [workload, input.path, String(iterations)])
}

/// Runs a peer's Python script from Benchmarks/ and returns the `operationsPerSecond` of the
/// JSON object it prints, or nil when it fails.
func runPeerScript(python: String, script name: String, arguments: [String]) -> Double? {
    runPeerScriptFigures(python: python, script: name, arguments: arguments)?["operationsPerSecond"]
}

/// Runs a peer's Python script from Benchmarks/ and returns the numbers of the JSON object it
/// prints (it must have `operationsPerSecond`), or nil when it fails.
func runPeerScriptFigures(python: String, script name: String, arguments: [String]) -> [String: Double]? {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: python)
    p.arguments = [script.path] + arguments
    let out = Pipe()
    p.standardOutput = out
    do { try p.run() } catch { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0,
          let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
    let figures = json.compactMapValues { $0 as? Double }
    return figures["operationsPerSecond"] == nil ? nil : figures
}
