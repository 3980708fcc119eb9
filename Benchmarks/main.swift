import Foundation

// Prints one JSON document: the machine, and for each workload our rate, Bumble's rate on the
// same bytes (when a Python with bumble is given) and the ratio.
//
//     swift run -c release Benchmarks --python .venv/bin/python

var python: String? = ProcessInfo.processInfo.environment["BLE_PYTHON"]
var runs = 5
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--python": python = args.popFirst()
    case "--quick": runs = 1
    default: break
    }
}

struct Row: Codable {
    var workload: String
    var ours: Measurement
    var bumbleOperationsPerSecond: Double?
    var ratio: Double?
}

var rows: [Row] = []
let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bench-\(getpid())")
try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: tmp) }

@MainActor func compare(_ m: Measurement, bumble workload: String, input: [UInt8], iterations: Int) {
    var row = Row(workload: m.name, ours: m)
    if let python {
        let file = tmp.appendingPathComponent(workload + ".bin")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data(input))
        row.bumbleOperationsPerSecond = runBumble(python: python, workload: workload, input: file, iterations: iterations)
        row.ratio = row.bumbleOperationsPerSecond.map { m.operationsPerSecond / $0 }
    }
    rows.append(row)
}

// W1
let scanEvents = ScanWorkload.events(count: 200_000)
let scanStream = scanEvents.flatMap { $0 }
compare(ScanWorkload.run(stream: scanStream, packets: scanEvents.count, runs: runs), bumble: "scan", input: Array(scanEvents.prefix(20_000).joined()), iterations: 20_000)

let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
struct Report: Codable { var machine: [String: String]; var results: [Row] }
let data = try encoder.encode(Report(machine: machineDescription(), results: rows))
print(String(decoding: data, as: UTF8.self))
