import BLECore
import BLETestSupport
import Foundation
import GATTClient
import BLEWire
import GATTServer

/// What the shipped `ble` costs a small machine: the stripped size of the binary next to this
/// executable (make bench builds it static, as make dist does), the peak resident memory of
/// `ble --version`, the resident memory of an idle `ble gateway` (connected to mosquitto,
/// scanning, one advertiser on its virtual controller) 12 s after its start (2 s past its last
/// trim) and
/// what it is made of (smaps), the same beside busy processes (a loaded machine), the
/// time from its start to the first advertisement at a subscriber, and the memory per held
/// link (a gateway holding `links` links against the idle one).
enum FootprintWorkload {
    static func run(links: Int, directory: URL) async throws -> [Measurement] {
        let ble = try GatewayWorkload.bleExecutable()
        var rows: [Measurement] = []

        let stripped = directory.appendingPathComponent("ble-stripped")
        let strip = try ChildProcess(path: "/usr/bin/strip", ["-o", stripped.path, ble.path])
        guard ChildProcess.wait(strip.pid) == 0 else { throw BenchError("strip \(ble.path) failed") }
        let size = (try FileManager.default.attributesOfItem(atPath: stripped.path)[.size] as? Int) ?? 0
        try? FileManager.default.removeItem(at: stripped)
        var binary = Measurement(name: "footprint: ble binary, stripped (\(ble.path))", operations: 1, seconds: 0, operationsPerSecond: 0)
        binary.extra = ["bytes": Double(size), "MB": Double(size) / 1e6]
        rows.append(binary)

        if let peak = try peakResidentMiB(of: ble.path, ["--version"], directory: directory) {
            var version = Measurement(name: "footprint: ble --version, peak resident memory", operations: 1, seconds: 0, operationsPerSecond: 0)
            version.extra = ["peakResidentMiB": peak]
            rows.append(version)
        } else {
            progress("footprint: no /usr/bin/time (apt-get install time): the peak of ble --version is not measured")
        }

        let broker = try await GatewayWorkload.offThread { try BenchBroker.start(directory: directory) }
        defer { broker.stop() }
        let subscriber = try await GatewayWorkload.offThread { try BenchSubscriber.start(port: broker.port, pattern: "ble/#") }
        defer { subscriber.stop() }

        let idle = try await gateway(ble: ble.path, id: "idle", links: 0, broker: broker, subscriber: subscriber, directory: directory)
        var idleRow = Measurement(name: "footprint: idle ble gateway (mosquitto, scanning, 1 advertiser)", operations: 1, seconds: 0, operationsPerSecond: 0)
        idleRow.extra = ["residentMiB": idle.memory.residentMiB, "peakResidentMiB": idle.memory.peakResidentMiB,
                         "startupToFirstAdvertisementMilliseconds": idle.startup * 1000, "threads": idle.memory.threads]
        for (kind, kib) in idle.memory.residentKiBByKind { idleRow.extra["residentKiB \(kind)"] = kib }
        rows.append(idleRow)

        // The idle gateway on a busy machine: two processes per core that only spin, from before
        // its start until it is measured (shared machines have measured it at twice the idle figure).
        let hogCount = 2 * ProcessInfo.processInfo.activeProcessorCount
        let hogs = try (0..<hogCount).map { _ in try ChildProcess(path: "/bin/sh", ["-c", "while :; do :; done"]).pid }
        let loaded: (memory: ProcessMemory, startup: Double)
        do {
            defer { for pid in hogs { ChildProcess.wait(pid, afterSending: SIGKILL) } }
            loaded = try await gateway(ble: ble.path, id: "loaded", links: 0, broker: broker, subscriber: subscriber, directory: directory)
        }
        var loadedRow = Measurement(name: "footprint: idle ble gateway beside \(hogCount) busy processes (mosquitto, scanning, 1 advertiser)",
                                    operations: 1, seconds: 0, operationsPerSecond: 0)
        loadedRow.extra = ["residentMiB": loaded.memory.residentMiB, "peakResidentMiB": loaded.memory.peakResidentMiB,
                           "startupToFirstAdvertisementMilliseconds": loaded.startup * 1000, "threads": loaded.memory.threads,
                           "busyProcesses": Double(hogCount)]
        for (kind, kib) in loaded.memory.residentKiBByKind { loadedRow.extra["residentKiB \(kind)"] = kib }
        rows.append(loadedRow)

        let held = try await gateway(ble: ble.path, id: "links", links: links, broker: broker, subscriber: subscriber, directory: directory)
        var linkRow = Measurement(name: "footprint: ble gateway holding \(links) links (subscribed), per link", operations: links, seconds: 0, operationsPerSecond: 0)
        linkRow.extra = ["residentMiB": held.memory.residentMiB,
                         "residentKiBPerLink": (held.memory.residentMiB - idle.memory.residentMiB) * 1024 / Double(links)]
        rows.append(linkRow)

        if let group = try? BenchCgroup.make(name: "ble-bench-startup", cpuShare: 0.2, memoryBytes: 64 << 20) {
            defer { group.remove() }
            let small = try await gateway(ble: ble.path, id: "small", links: 0, broker: broker, subscriber: subscriber, directory: directory, cgroup: group)
            var row = Measurement(name: "footprint: idle ble gateway under \(group.describe)", operations: 1, seconds: 0, operationsPerSecond: 0)
            row.extra = ["residentMiB": small.memory.residentMiB, "startupToFirstAdvertisementMilliseconds": small.startup * 1000]
            rows.append(row)
        } else {
            progress("footprint: no control group could be made (root and a writable /sys/fs/cgroup are needed); the small-board startup is not measured")
        }
        return rows
    }

    /// Starts a gateway with `links` subscribed links and one advertiser, waits until it has
    /// published its first advertisement (and holds its links) and 12 s have passed since its
    /// start (at least 2 s more), reads its memory and stops it.
    static func gateway(ble: String, id: String, links: Int, broker: BenchBroker, subscriber: BenchSubscriber, directory: URL,
                        cgroup: BenchCgroup? = nil) async throws -> (memory: ProcessMemory, startup: Double) {
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 64
        let vc = VirtualController(options: options)
        var devices: [String] = []
        for i in 0..<links {
            let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
            let address = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_20_00 + UInt64(i)), type: .random)
            vc.addPeripheral(SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06], attServer: server))
            devices.append(#"{"address": "\#(address.address)", "addressType": "random", "subscribe": [{"service": "180D", "characteristic": "2A37"}]}"#)
        }
        // The advertiser: Flags; Complete Local Name "fp".
        vc.addPeripheral(SimulatedPeripheral(address: LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_30_00), type: .random),
                                             advertisingData: [0x02, 0x01, 0x06, 0x03, 0x09, 0x66, 0x70], isConnectable: false))
        let config = directory.appendingPathComponent("footprint-\(id).json")
        try #"{"id": "\#(id)", "mqtt": {"url": "mqtt://127.0.0.1:\#(broker.port)"}, "scan": {"publishIntervalSeconds": 30, "lostAfterSeconds": 30}, "devices": [\#(devices.joined(separator: ", "))]}"#
            .write(to: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: config) }
        let spec = try vc.servePseudoTerminal()
        let arguments = [ble, "-d", spec, "gateway", "--config", config.path]
        let spawned = Date().timeIntervalSince1970
        let pid = try ChildProcess(path: cgroup == nil ? ble : "/bin/sh",
                                   cgroup.map { BenchCgroup.wrapper + $0.procsFiles + ["--"] + arguments } ?? Array(arguments.dropFirst()),
                                   stderr: .file(directory.appendingPathComponent("footprint-\(id).log").path)).pid
        defer { ChildProcess.wait(pid, afterSending: SIGTERM) }
        let topic = "ble/\(id)/devices/C00000003000"
        guard try await GatewayWorkload.offThread({ subscriber.waitForTopic(topic, timeout: 30) }) else {
            throw BenchError("the \(id) gateway published no advertisement within 30 s")
        }
        let first = subscriber.lines().lazy.compactMap(BenchSubscriber.split).first { $0.1 == topic }?.0 ?? .nan
        if links > 0 {
            guard try await GatewayWorkload.offThread({ subscriber.waitForTopics(prefix: "ble/\(id)/devices/C000000020", suffix: "/link", count: links, timeout: 60) }) else {
                throw BenchError("the \(id) gateway did not hold its \(links) links within 60 s")
            }
        }
        // Past the gateway's last ExecutableTrim (10 s after its start), and 2 s more of running.
        let settle = max(2, 12 - (Date().timeIntervalSince1970 - spawned))
        try await Task.sleep(for: .milliseconds(Int(settle * 1000)))
        // smaps names the executable by its real path (.build/release is a symbolic link).
        return (ProcessMemory(pid: pid, executable: URL(fileURLWithPath: ble).resolvingSymlinksInPath().path), first - spawned)
    }

    /// The peak resident memory of a run of `path`, from GNU time (`%M`, KiB). Not from our
    /// own wait4: posix_spawn starts the child with this process's memory (vfork), and the
    /// kernel keeps that high-water mark across its exec.
    static func peakResidentMiB(of path: String, _ arguments: [String], directory: URL) throws -> Double? {
        let time = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: time) else { return nil }
        let report = directory.appendingPathComponent("peak-rss")
        let child = try ChildProcess(path: time, ["-f", "%M", "-o", report.path, path] + arguments)
        guard ChildProcess.wait(child.pid) == 0 else { throw BenchError("\(path) \(arguments.joined(separator: " ")) failed") }
        defer { try? FileManager.default.removeItem(at: report) }
        let text = try String(contentsOf: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return Double(text.split(separator: "\n").last ?? "").map { $0 / 1024 }
    }

    static func progress(_ s: String) { GatewayWorkload.progress(s) }
}
