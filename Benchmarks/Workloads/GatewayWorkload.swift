import BLECore
import BLEGateway
import BLETestSupport
import Dispatch
import Foundation
import GATTClient
import BLEWire
import GATTServer

/// The gateway at scale (docs/gateway.md), against a real mosquitto on a free local port.
///
/// One gateway: a `ble gateway` process on a virtual controller served on a pseudo-terminal
/// (as a gateway with a UART controller runs), 1,000 advertisers reported at 10,000 reports/s
/// (each LE Advertising Report event its own write, at the pace it is due; each advertiser's
/// manufacturer data changes once a second, so about 1,000 advertisement messages/s go out)
/// and 8 links from its config file, each notifying its Heart Rate Measurement 10 times a
/// second (QoS 1). Measured: the gateway process's CPU time (/proc/PID/stat) per second of the
/// run, so the feeder, the simulated devices and the subscriber are not counted, and the
/// latency from a report's write to its message reaching a `mosquitto_sub` subscriber.
///
/// The fleet: 8 `ble gateway` processes, each on its own virtual controller served on a
/// pseudo-terminal with 200 devices; every round each device advertises new data, so each
/// device topic gets one message per round. Counted per topic at one subscriber: nothing may
/// be missing; CPU per gateway process from /proc/PID/stat.
enum GatewayWorkload {
    static let advertisers = 1_000
    static let reportsPerSecond = 10_000
    static let links = 8
    static let notificationsPerSecondPerLink = 10

    // MARK: One gateway

    /// With `sensors`, the advertisers are the sensor scene's (`GatewaySensorReports`) instead
    /// of manufacturer data, and the row counts decoded readings instead of latency.
    static func single(seconds: Int, directory: URL, cgroup: BenchCgroup? = nil, sensors: Bool = false) async throws -> Measurement {
        progress("gateway: starting mosquitto")
        let broker = try await offThread { try BenchBroker.start(directory: directory) }
        defer { broker.stop() }
        progress("gateway: mosquitto on port \(broker.port); starting mosquitto_sub")
        let subscriber = try await offThread { try BenchSubscriber.start(port: broker.port, pattern: "ble/bench/#") }
        defer { subscriber.stop() }
        progress("gateway: mosquitto on port \(broker.port), subscriber ready")
        return try await singleRun(seconds: seconds, broker: broker, subscriber: subscriber, directory: directory, cgroup: cgroup, sensors: sensors)
    }

    /// With `cgroup`, the gateway runs inside it from its first instruction (a small board:
    /// `BenchCgroup`), and the row says so.
    static func singleRun(seconds: Int, broker: BenchBroker, subscriber: BenchSubscriber, directory: URL, cgroup: BenchCgroup? = nil,
                          sensors: Bool = false) async throws -> Measurement {
        // The readings of every second of the feed (and a few more for a slow start).
        let sensorReports = sensors ? try GatewaySensorReports(seconds: seconds + 5) : nil
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 64
        let vc = VirtualController(options: options)
        var servers: [GATTServer] = []
        var devices: [String] = []
        for i in 0..<links {
            let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
            servers.append(server)
            let address = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_10_00 + UInt64(i)), type: .random)
            vc.addPeripheral(SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06], attServer: server))
            devices.append(#"{"address": "\#(address.address)", "addressType": "random", "subscribe": [{"service": "180D", "characteristic": "2A37"}]}"#)
        }
        let configFile = directory.appendingPathComponent("gateway-bench.json")
        try #"{"id": "bench", "mqtt": {"url": "mqtt://127.0.0.1:\#(broker.port)"}, "metricsIntervalSeconds": 1, "scan": {"publishIntervalSeconds": 30, "lostAfterSeconds": 30}, "devices": [\#(devices.joined(separator: ", "))]\#(sensors ? ", \"keys\": " + GatewaySensorReports.configKeys : "")}"#
            .write(to: configFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: configFile) }
        let spec = try vc.servePseudoTerminal()
        let ble = try bleExecutable()
        let gateway = [ble.path, "-d", spec, "gateway", "--config", configFile.path]
        let spawned = Date().timeIntervalSince1970
        var pid = try ChildProcess(path: cgroup == nil ? ble.path : "/bin/sh",
                                   cgroup.map { BenchCgroup.wrapper + $0.procsFiles + ["--"] + gateway } ?? Array(gateway.dropFirst()),
                                   stderr: .file(directory.appendingPathComponent("gateway-bench.log").path)).pid
        defer { if pid != 0 { ChildProcess.wait(pid, afterSending: SIGKILL) } }
        // Every link subscribed (its retained `connected`), and the scan running.
        progress("gateway: ble gateway (pid \(pid)) on \(spec), waiting for its \(links) links")
        guard try await offThread({ subscriber.waitForTopics(prefix: "ble/bench/devices/C0000000100", suffix: "/link", count: links, timeout: 30) }) else {
            throw BenchError("the gateway did not hold its \(links) links within 30 s")
        }
        try await vc.waitUntil("the gateway's scan", timeout: .seconds(10)) { $0.isScanning }

        progress("gateway: links up, scanning; feeding for \(seconds) s")
        // The reports reach the gateway as a UART controller's would: each report its own
        // write to the pseudo-terminal, at the pace they are due.
        let feeder = ReportFeeder(queue: vc.queue, reportsPerSecond: reportsPerSecond, source: GatewayReports(sensors: sensorReports)) { bytes in
            var offset = 0
            while offset + 3 <= bytes.count {
                let length = Int(bytes[offset + 2])
                guard offset + 3 + length <= bytes.count else { break }
                vc.inject(.event(HCIEventPacket(code: bytes[offset + 1], parameters: Array(bytes[(offset + 3)..<(offset + 3 + length)]))))
                offset += 3 + length
            }
        }
        let notifyQueue = DispatchQueue(label: "bench.notify")
        let notifier = DispatchSource.makeTimerSource(queue: notifyQueue)
        let notified = Counter()
        notifier.schedule(deadline: .now(), repeating: .milliseconds(1000 / notificationsPerSecondPerLink))
        notifier.setEventHandler {
            let n = notified.next()
            for server in servers {
                Task { _ = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A37), value: [0x00, UInt8(truncatingIfNeeded: n)]) }
            }
        }
        let messagesStart = subscriber.messageCount()
        let cpuStart = processCPUSeconds(pid)
        let wallStart = ContinuousClock.now
        feeder.start()
        notifier.resume()
        try await Task.sleep(for: .seconds(seconds))
        notifier.cancel()
        let (sent, elapsed) = feeder.stop()
        let cpu = processCPUSeconds(pid) - cpuStart
        let wall = ContinuousClock.now - wallStart
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let published = subscriber.messageCount() - messagesStart
        progress("gateway: fed \(sent) reports in \(elapsed) s; draining")
        // Drained when a metrics message after the feed shows an empty queue.
        let metrics = try await offThread { subscriber.waitForMetrics(topic: "ble/bench/metrics", after: Date(), timeout: 10) { $0["queueDepth"] == 0 } }
        // Resident memory at 1,000 advertisers and 8 links; alive means it never restarted
        // (the same process from start to end: under a memory limit the kernel would kill it).
        let memory = ProcessMemory(pid: pid)
        let alive = kill(pid, 0) == 0
        ChildProcess.wait(pid, afterSending: SIGTERM)
        pid = 0

        // Latency: the first message of each (advertiser, epoch) against the feed of the
        // report that changed the data.
        var latencies: [Double] = []
        var seen = Set<Int>()
        var notifications = 0
        var decoded = 0, refused = 0
        for line in subscriber.lines() {
            guard let (time, topic, payload) = BenchSubscriber.split(line) else { continue }
            if topic.hasSuffix("/180D/2A37") { notifications += 1; continue }
            if sensors {
                if payload.contains("\"decoded\":{") && payload.contains("\"temperature\":") { decoded += 1 }
                if payload.contains("\"reason\":") { refused += 1 }
                continue
            }
            guard let range = payload.range(of: "\"FFFF\":\"") else { continue }
            let hex = payload[range.upperBound...].prefix(8)
            guard hex.count == 8, let v = UInt32(hex, radix: 16) else { continue }
            let i = Int(v >> 24) | Int((v >> 16) & 0xFF) << 8
            let epoch = Int((v >> 8) & 0xFF) | Int(v & 0xFF) << 8
            let key = epoch * advertisers + i
            guard epoch > 0, seen.insert(key).inserted else { continue }
            let n = epoch * 10 * advertisers + i   // the first report of that epoch
            guard let fed = feeder.feedTime(of: n) else { continue }
            latencies.append((time - fed) * 1e6)
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        // Startup: from the spawn to the first advertisement message at the subscriber.
        let firstAdvertisement = subscriber.lines().lazy.compactMap(BenchSubscriber.split)
            .first { $0.0 >= spawned && $0.1.split(separator: "/").count == 4 && $0.1.contains("/devices/") }?.0
        let limits = cgroup.map { " under \($0.describe)" } ?? ""
        let scene = sensors ? "1,000 sensors (1/3 encrypted BTHome, 1/3 BTHome, 1/3 pvvx)" : "1,000 advertisers"
        var m = Measurement(name: "gateway: \(scene) at 10,000 reports/s + 8 notifying links -> mosquitto (reports)\(limits)",
                            operations: sent, seconds: elapsed, operationsPerSecond: Double(sent) / elapsed)
        m.extra = [
            "cpuPercentOfOneCore": cpu / wallSeconds * 100,
            "cpuMicrosecondsPerReport": cpu * 1e6 / Double(max(sent, 1)),
            "messagesPerSecond": Double(published) / wallSeconds,
            "dropped": metrics?["dropped"] ?? .nan,
            "notificationsReceived": Double(notifications),
            "decodedMessages": Double(decoded), "refusedMessages": Double(refused),
            "residentMiB": memory.residentMiB, "peakResidentMiB": memory.peakResidentMiB,
            "stillRunning": alive ? 1 : 0,
            "startupToFirstAdvertisementMilliseconds": firstAdvertisement.map { ($0 - spawned) * 1000 } ?? .nan,
        ]
        if !sensors {
            m.extra["latencySamples"] = Double(latencies.count)
            m.extra["latencyP50Microseconds"] = percentile(0.5)
            m.extra["latencyP99Microseconds"] = percentile(0.99)
            m.extra["latencyMaxMicroseconds"] = latencies.last ?? .nan
        }
        if let cgroup {
            m.extra["cgroupPeakMemoryMiB"] = cgroup.peakMemoryBytes / 1_048_576
            m.extra["cgroupMemoryLimitHits"] = cgroup.limitHits
            m.extra["cgroupThrottledSeconds"] = cgroup.throttledSeconds
        }
        return m
    }

    // MARK: Fleet

    static func fleet(gateways: Int, devices: Int, rounds: Int, directory: URL) async throws -> Measurement {
        let broker = try await offThread { try BenchBroker.start(directory: directory) }
        defer { broker.stop() }
        let subscriber = try await offThread { try BenchSubscriber.start(port: broker.port, pattern: "ble/#") }
        defer { subscriber.stop() }
        var options = VirtualController.Options()
        options.time = .immediate
        var radios: [VirtualController] = []
        var processes: [pid_t] = []
        defer { for pid in processes { kill(pid, SIGKILL); var st: Int32 = 0; waitpid(pid, &st, WNOHANG) } }
        let ble = try bleExecutable()
        for g in 0..<gateways {
            let vc = VirtualController(options: options)
            for i in 0..<devices { vc.addPeripheral(fleetDevice(g, i, round: 0)) }
            let spec = try vc.servePseudoTerminal()
            radios.append(vc)
            processes.append(try ChildProcess(path: ble.path, ["-d", spec, "gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--id", "fleet\(g)",
                                                  "--passive", "--publish-interval", "3600", "--lost-after", "3600", "--metrics-interval", "3600"],
                                       stderr: .file(directory.appendingPathComponent("gateway\(g).log").path)).pid)
        }
        // Round 0: the advertising each radio does when its gateway's scan starts.
        let total = gateways * devices
        progress("fleet: \(gateways) gateways started; waiting for round 0 (\(total) device messages)")
        guard try await offThread({ subscriber.waitForDeviceMessages(total: total, timeout: 60) }) else {
            throw BenchError("round 0: \(subscriber.deviceMessageCount()) of \(total) device messages within 60 s")
        }
        let cpuStart = processes.map { processCPUSeconds($0) }
        let start = ContinuousClock.now
        for r in 1...rounds {
            // The workload's pace: one round a second.
            try await Task.sleep(until: start + .seconds(r), clock: .continuous)
            for (g, vc) in radios.enumerated() {
                for i in 0..<devices { vc.addPeripheral(fleetDevice(g, i, round: r)) }
            }
        }
        let expected = total * (rounds + 1)
        progress("fleet: \(rounds) rounds sent; waiting for \(expected) device messages")
        let complete = try await offThread { subscriber.waitForDeviceMessages(total: expected, timeout: 60) }
        let wall = ContinuousClock.now - start
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let cpu = zip(processes, cpuStart).map { processCPUSeconds($0.0) - $0.1 }
        // SIGTERM: each gateway stops cleanly (links closed, `offline` published).
        let running = processes
        for pid in running { kill(pid, SIGTERM) }
        let statuses = try await offThread { running.map { ChildProcess.wait($0) } }
        processes = []
        let counts = subscriber.countsPerDeviceTopic()
        let short = counts.values.filter { $0 < rounds + 1 }.count
        let missing = total - counts.count
        let received = counts.values.reduce(0, +)
        var m = Measurement(name: "gateway fleet: \(gateways) ble gateway processes x \(devices) devices, \(rounds) rounds -> one mosquitto (device messages)",
                            operations: received, seconds: wallSeconds, operationsPerSecond: Double(received) / wallSeconds)
        m.extra = [
            "expectedMessages": Double(expected), "receivedMessages": Double(received),
            "topics": Double(counts.count), "topicsShort": Double(short + missing),
            "topicsOver": Double(counts.values.filter { $0 > rounds + 1 }.count),
            "complete": complete && short == 0 && missing == 0 ? 1 : 0,
            "cleanExits": Double(statuses.filter { $0 == 0 }.count),
            "cpuPercentPerGatewayMean": cpu.reduce(0, +) / Double(max(cpu.count, 1)) / wallSeconds * 100,
            "cpuPercentPerGatewayMax": (cpu.max() ?? 0) / wallSeconds * 100,
        ]
        return m
    }

    /// Device `i` of gateway `g` in round `r`: flags and manufacturer data of company 0xFFFF
    /// (reserved for tests, Assigned Numbers 7.1) holding g, i and r.
    static func fleetDevice(_ g: Int, _ i: Int, round r: Int) -> SimulatedPeripheral {
        let address = LEAddress(BluetoothAddress(rawValue: 0xC2_00_00_00_00_00 | UInt64(g) << 16 | UInt64(i)), type: .random)
        return SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF,
                                                                       UInt8(g), UInt8(i & 0xFF), UInt8(i >> 8), UInt8(r & 0xFF)],
                                   isConnectable: false)
    }

    /// `ble` next to this executable (make bench builds both), else the debug build.
    /// The `ble` to measure: `BLE_BENCH_BLE` when set (scripts/bench-compare measures the
    /// base's binary with this harness), else the one next to this executable.
    static func bleExecutable() throws -> URL {
        if let named = ProcessInfo.processInfo.environment["BLE_BENCH_BLE"], !named.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: named) else { throw BenchError("BLE_BENCH_BLE=\(named) is not an executable") }
            return URL(fileURLWithPath: named)
        }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.deletingLastPathComponent()
        for candidate in [here.appendingPathComponent("ble"), here.deletingLastPathComponent().appendingPathComponent("debug/ble")]
        where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw BenchError("no ble executable next to \(here.path); build it with 'swift build -c release --product ble'")
    }

    /// utime + stime of a process (/proc/PID/stat fields 14 and 15, in clock ticks).
    static func processCPUSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Runs blocking work (process start, waits on the subscriber) on a thread of its own, so
    /// the cooperative pool keeps its threads for the gateway.
    static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try body() }) }.start()
        }
    }

    static func progress(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }
}

final class Counter: @unchecked Sendable { // used only on one serial queue
    private var n = 0
    func next() -> Int { n += 1; return n }
}

/// The gateway scene's reports, 10,000 a second from 1,000 advertisers.
struct GatewayReports: AdvertisingReportSource {
    /// The sensor scene instead, when set.
    var sensors: GatewaySensorReports?

    /// Report `n`: advertiser n % 1000 in round n / 1000; its manufacturer data (company
    /// 0xFFFF) holds the advertiser and the epoch (round / 10, so it changes once a second);
    /// a quarter also carry Battery service data, RSSI changes every report. One ADV_IND from
    /// a random static address.
    func append(report n: Int, elapsed: UInt64, to buffer: inout [UInt8]) {
        if let sensors { return sensors.append(report: n, elapsed: elapsed, to: &buffer) }
        let i = n % GatewayWorkload.advertisers
        let round = n / GatewayWorkload.advertisers
        let epoch = round / 10
        var ad: [UInt8] = [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF, UInt8(i & 0xFF), UInt8(i >> 8), UInt8(epoch & 0xFF), UInt8((epoch >> 8) & 0xFF)]
        if i % 4 == 0 { ad += [0x04, 0x16, 0x0F, 0x18, UInt8(50 + i % 50)] }
        buffer.appendLegacyReport(eventType: 0x00, address: 0xC1_00_00_00_00_00 | UInt64(i), data: ad, rssi: Int8(-40 - n % 30))
    }
}

/// mosquitto on a free local port, for one workload.
final class BenchBroker: @unchecked Sendable { // immutable after start
    let port: Int
    let pid: pid_t

    private init(port: Int, pid: pid_t) {
        self.port = port
        self.pid = pid
    }

    /// `sysInterval`: mosquitto publishes its `$SYS` counters that often (seconds; its default, 10, when nil).
    static func start(directory: URL, sysInterval: Int? = nil) throws -> BenchBroker {
        let executable = ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let executable else { throw BenchError("mosquitto not found; apt-get install mosquitto (make deps does)") }
        let port = try freePort()
        let conf = directory.appendingPathComponent("mosquitto-\(port).conf")
        try ("listener \(port) 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\nmax_queued_messages 100000\nlog_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\n"
            + (sysInterval.map { "sys_interval \($0)\n" } ?? "")).write(to: conf, atomically: true, encoding: .utf8)
        let process = try ChildProcess(path: executable, ["-c", conf.path], stderr: .pipe)
        let pid = process.pid
        guard let output = process.pipe else { throw BenchError("no pipe from mosquitto") }
        // Ready when it says it is running (it exits at once on a bad config); the rest of
        // its log is drained by a thread of its own so it never blocks on a full pipe.
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !text.contains(" running") {
            let n = read(output, &buffer, buffer.count)
            if n <= 0 { close(output); process.stop(); throw BenchError("mosquitto exited before it was running: \(text)") }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        Thread.detachNewThread {
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(output, &sink, sink.count) > 0 {}
            close(output)
        }
        return BenchBroker(port: port, pid: pid)
    }

    func stop() { ChildProcess.wait(pid, afterSending: SIGTERM) }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0 else { throw BenchError("bind: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}

/// `mosquitto_sub` in its own process (so its work is not in the gateway's CPU time), each
/// message one line: receive time (Unix seconds), topic, payload. A reader thread keeps the
/// bytes and wakes whoever waits; the lines are parsed only when asked for, so while the
/// gateway is measured the reader's share of this process's CPU time is a copy per read.
final class BenchSubscriber: @unchecked Sendable { // every field but `pid` is guarded by `condition`
    let pid: pid_t
    private let condition = NSCondition()
    /// What mosquitto_sub wrote; `parsed` bytes of it are split into lines already.
    private var raw: [UInt8] = []
    private var parsed = 0
    private var waiting = 0
    private var text: [String] = []
    private var messages = 0
    private var deviceCounts: [Substring: Int] = [:]
    private var deviceMessages = 0
    private var linkTopics = Set<String>()

    private init(pid: pid_t) { self.pid = pid }

    static func start(port: Int, pattern: String) throws -> BenchSubscriber {
        let process = try ChildProcess(path: "/usr/bin/mosquitto_sub",
            ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", pattern, "-t", "bench/probe", "-F", "%U %t %p"], stdout: .pipe)
        let pid = process.pid
        guard let output = process.pipe else { throw BenchError("no pipe from mosquitto_sub") }
        let s = BenchSubscriber(pid: pid)
        // Its own thread reads until mosquitto_sub ends.
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(output, &buffer, buffer.count)
                if n <= 0 { break }
                s.take(buffer[0..<n])
            }
            close(output)
        }
        // Subscribed once a retained probe comes back.
        let pub = try ChildProcess(path: "/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", "bench/probe", "-m", "1", "-r"])
        ChildProcess.wait(pub.pid)
        guard s.wait(timeout: 10, until: { $0.text.contains { $0.contains(" bench/probe ") } }) else {
            throw BenchError("mosquitto_sub did not receive its probe within 10 s")
        }
        return s
    }

    private func take(_ bytes: ArraySlice<UInt8>) {
        condition.lock()
        raw.append(contentsOf: bytes)
        if waiting > 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Splits the complete lines not yet parsed (called with `condition` locked).
    private func parse() {
        guard let end = raw[parsed...].lastIndex(of: UInt8(ascii: "\n")) else { return }
        let chunk = String(decoding: raw[parsed..<end], as: UTF8.self)
        parsed = end + 1
        for line in chunk.split(separator: "\n", omittingEmptySubsequences: false) {
            let fields = line.split(separator: " ", maxSplits: 2)
            if fields.count == 3 {
                messages += 1
                let topic = fields[1]
                let levels = topic.split(separator: "/")
                if levels.count == 4 && levels[2] == "devices" {
                    deviceCounts[topic, default: 0] += 1
                    deviceMessages += 1
                } else if levels.count == 5 && levels[4] == "link" {
                    linkTopics.insert(String(topic))
                }
            }
            text.append(String(line))
        }
    }

    private func wait(timeout: Double, until done: (BenchSubscriber) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        waiting += 1
        defer { waiting -= 1; condition.unlock() }
        parse()
        while !done(self) {
            if !condition.wait(until: deadline) { parse(); return done(self) }
            parse()
        }
        return true
    }

    func waitForTopics(prefix: String, suffix: String, count: Int, timeout: Double) -> Bool {
        wait(timeout: timeout) { s in s.linkTopics.filter { $0.hasPrefix(prefix) && $0.hasSuffix(suffix) }.count >= count }
    }

    /// True once a message on `topic` came (within `timeout` seconds).
    func waitForTopic(_ topic: String, timeout: Double) -> Bool {
        wait(timeout: timeout) { s in s.deviceCounts[Substring(topic)] != nil || s.linkTopics.contains(topic) }
    }

    func waitForDeviceMessages(total: Int, timeout: Double) -> Bool {
        wait(timeout: timeout) { $0.deviceMessages >= total }
    }

    /// Messages received so far.
    func messageCount() -> Int {
        condition.lock(); defer { condition.unlock() }
        parse()
        return messages
    }

    /// The numbers of the first message on `topic` received after `after` for which `done`
    /// holds (the gateway's metrics: `{"queueDepth": 0, ...}`), or nil after `timeout` seconds.
    func waitForMetrics(topic: String, after: Date, timeout: Double, until done: @escaping ([String: Double]) -> Bool) -> [String: Double]? {
        var found: [String: Double]?
        var checked = 0
        _ = wait(timeout: timeout) { s in
            while checked < s.text.count {
                defer { checked += 1 }
                guard let (time, t, payload) = BenchSubscriber.split(s.text[checked]), t == topic, time >= after.timeIntervalSince1970,
                      let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else { continue }
                let numbers = object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
                if done(numbers) { found = numbers; return true }
            }
            return false
        }
        return found
    }

    /// The first message received at or after `after` (Unix seconds) whose topic and payload
    /// `match` accepts, with its receive time, or nil after `timeout` seconds.
    func firstMessage(after: Double, timeout: Double, where match: @escaping (Substring, Substring) -> Bool) -> (time: Double, topic: String, payload: String)? {
        var found: (Double, String, String)?
        var checked = 0
        _ = wait(timeout: timeout) { s in
            while checked < s.text.count {
                defer { checked += 1 }
                guard let (time, topic, payload) = BenchSubscriber.split(s.text[checked]), time >= after, match(topic, payload) else { continue }
                found = (time, String(topic), String(payload))
                return true
            }
            return false
        }
        return found
    }

    func deviceMessageCount() -> Int {
        condition.lock(); defer { condition.unlock() }
        parse()
        return deviceMessages
    }

    func countsPerDeviceTopic() -> [Substring: Int] {
        condition.lock(); defer { condition.unlock() }
        parse()
        return deviceCounts
    }

    func lines() -> [String] {
        condition.lock(); defer { condition.unlock() }
        parse()
        return text
    }

    /// "1701234567.123456789 topic payload" into its parts.
    static func split(_ line: String) -> (Double, Substring, Substring)? {
        let f = line.split(separator: " ", maxSplits: 2)
        guard f.count == 3, let t = Double(f[0]) else { return nil }
        return (t, f[1], f[2])
    }

    func stop() { ChildProcess.wait(pid, afterSending: SIGTERM) }
}
