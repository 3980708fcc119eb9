import Foundation

/// One measured workload: operations per second, best of several runs.
struct Measurement: Codable {
    var name: String
    var operations: Int
    var seconds: Double
    var operationsPerSecond: Double
    var extra: [String: Double] = [:]
}

/// Runs `body` (which performs `operations` operations) `runs` times; keeps the fastest run.
func measure(_ name: String, operations: Int, runs: Int = 5, _ body: () throws -> Void) rethrows -> Measurement {
    var best = Double.infinity
    for _ in 0..<runs {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        best = min(best, elapsed)
    }
    return Measurement(name: name, operations: operations, seconds: best, operationsPerSecond: Double(operations) / best)
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
