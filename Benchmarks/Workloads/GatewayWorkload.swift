import BLECore
import BLEGateway
import BLETestSupport
import Dispatch
import Foundation
import GATTClient

/// The gateway at scale (docs/gateway.md), against a real mosquitto on a free local port.
///
/// One gateway: `Gateway` on a `Central` over the in-process virtual controller, 1,000
/// advertisers reported at 10,000 reports/s (H4 LE Advertising Report events fed into the
/// host as in the dense scene; each advertiser's manufacturer data changes once a second, so
/// about 1,000 advertisement messages/s go out) and 8 links from the config, each notifying
/// its Heart Rate Measurement 10 times a second through the virtual controller (QoS 1).
/// Measured: process CPU time (getrusage) per second of the run, and the latency from a
/// report's feed into the host to its message reaching a `mosquitto_sub` subscriber.
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

    static func single(seconds: Int, directory: URL) throws -> Measurement {
        let broker = try BenchBroker.start(directory: directory)
        defer { broker.stop() }
        let subscriber = try BenchSubscriber.start(port: broker.port, pattern: "ble/bench/#")
        defer { subscriber.stop() }
        return try runBlocking { try await singleRun(seconds: seconds, broker: broker, subscriber: subscriber) }
    }

    static func singleRun(seconds: Int, broker: BenchBroker, subscriber: BenchSubscriber) async throws -> Measurement {
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 64
        let vc = VirtualController(options: options)
        var servers: [GATTServer] = []
        var config = GatewayConfig()
        config.broker.url = "mqtt://127.0.0.1:\(broker.port)"
        config.id = "bench"
        config.metricsInterval = .seconds(1)
        config.scan.publishInterval = .seconds(30)
        config.scan.lostAfter = .seconds(30)
        for i in 0..<links {
            let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
            servers.append(server)
            let address = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_10_00 + UInt64(i)), type: .random)
            vc.addPeripheral(SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06], attServer: server))
            var device = GatewayConfig.Device(address: address)
            device.subscribe = [GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180D), characteristic: BluetoothUUID(uuid16: 0x2A37))]
            config.devices.append(device)
        }
        let tap = TapTransport(vc.makeTransport())
        let central = Central(transport: tap, options: vc.centralOptions())
        try await central.powerOn()
        let gateway = try Gateway(central: central, config: config)
        let task = Task { try await gateway.run() }
        // Every link subscribed (its retained `connected`), and the scan running.
        guard subscriber.waitForTopics(prefix: "ble/bench/devices/C0000000100", suffix: "/link", count: links, timeout: 30) else {
            throw BenchError("the gateway did not hold its \(links) links within 30 s")
        }
        try await vc.waitUntil("the gateway's scan", timeout: .seconds(10)) { $0.isScanning }

        let feeder = GatewayFeeder(tap: tap, queue: vc.adapterExecutor.queue)
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
        let deliveredStart = await gateway.publisher.delivered
        let cpuStart = DenseWorkload.cpuSeconds()
        let wallStart = ContinuousClock.now
        feeder.start()
        notifier.resume()
        try await Task.sleep(for: .seconds(seconds))
        notifier.cancel()
        let (sent, elapsed) = feeder.stop()
        let cpu = DenseWorkload.cpuSeconds() - cpuStart
        let wall = ContinuousClock.now - wallStart
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        _ = await gateway.publisher.drain(timeout: .seconds(10))
        let delivered = await gateway.publisher.delivered - deliveredStart
        let dropped = await gateway.publisher.dropped
        task.cancel()
        _ = try? await task.value
        await central.close()

        // Latency: the first message of each (advertiser, epoch) against the feed of the
        // report that changed the data.
        var latencies: [Double] = []
        var seen = Set<Int>()
        var notifications = 0
        for line in subscriber.lines() {
            guard let (time, topic, payload) = BenchSubscriber.split(line) else { continue }
            if topic.hasSuffix("/180D/2A37") { notifications += 1; continue }
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
        var m = Measurement(name: "gateway: 1,000 advertisers at 10,000 reports/s + 8 notifying links -> mosquitto (reports)",
                            operations: sent, seconds: elapsed, operationsPerSecond: Double(sent) / elapsed)
        m.extra = [
            "cpuPercentOfOneCore": cpu / wallSeconds * 100,
            "cpuMicrosecondsPerReport": cpu * 1e6 / Double(max(sent, 1)),
            "publishesPerSecond": Double(delivered) / wallSeconds,
            "dropped": Double(dropped),
            "notificationsReceived": Double(notifications),
            "latencySamples": Double(latencies.count),
            "latencyP50Microseconds": percentile(0.5), "latencyP99Microseconds": percentile(0.99),
            "latencyMaxMicroseconds": latencies.last ?? .nan,
        ]
        return m
    }

    // MARK: Fleet

    static func fleet(gateways: Int, devices: Int, rounds: Int, directory: URL) throws -> Measurement {
        let broker = try BenchBroker.start(directory: directory)
        defer { broker.stop() }
        let subscriber = try BenchSubscriber.start(port: broker.port, pattern: "ble/#")
        defer { subscriber.stop() }
        var options = VirtualController.Options()
        options.time = .immediate
        var radios: [VirtualController] = []
        var processes: [Process] = []
        defer { for p in processes where p.isRunning { p.terminate() } }
        let ble = try bleExecutable()
        for g in 0..<gateways {
            let vc = VirtualController(options: options)
            for i in 0..<devices { vc.addPeripheral(fleetDevice(g, i, round: 0)) }
            let spec = try vc.servePseudoTerminal()
            radios.append(vc)
            let p = Process()
            p.executableURL = ble
            p.arguments = ["-d", spec, "gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--id", "fleet\(g)", "--passive",
                           "--publish-interval", "3600", "--lost-after", "3600", "--metrics-interval", "3600"]
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            processes.append(p)
        }
        // Round 0: the advertising each radio does when its gateway's scan starts.
        let total = gateways * devices
        guard subscriber.waitForDeviceMessages(total: total, timeout: 60) else {
            throw BenchError("round 0: \(subscriber.deviceMessageCount()) of \(total) device messages within 60 s")
        }
        let cpuStart = processes.map { processCPUSeconds($0.processIdentifier) }
        let start = ContinuousClock.now
        for r in 1...rounds {
            Thread.sleep(until: Date(timeIntervalSinceNow: 1))
            for (g, vc) in radios.enumerated() {
                for i in 0..<devices { vc.addPeripheral(fleetDevice(g, i, round: r)) }
            }
        }
        let expected = total * (rounds + 1)
        let complete = subscriber.waitForDeviceMessages(total: expected, timeout: 60)
        let wall = ContinuousClock.now - start
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let cpu = zip(processes, cpuStart).map { processCPUSeconds($0.0.processIdentifier) - $0.1 }
        for p in processes { p.terminate() }
        for p in processes { p.waitUntilExit() }
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
    static func bleExecutable() throws -> URL {
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

    /// Runs `body` to completion from synchronous code (the benchmark's main flow is async).
    static func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        Task {
            do { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return try box.get()
    }
}

final class ResultBox<T: Sendable>: @unchecked Sendable { // written once before the semaphore signal, read after the wait
    private var result: Result<T, any Error>?
    func set(_ r: Result<T, any Error>) { result = r }
    func get() throws -> T { try result!.get() }
}

final class Counter: @unchecked Sendable { // used only on one serial queue
    private var n = 0
    func next() -> Int { n += 1; return n }
}

/// Feeds 10,000 LE Advertising Reports a second from 1,000 advertisers on the adapter queue
/// (a 2 ms dispatch timer sends what is due) and remembers when each batch went in.
final class GatewayFeeder: @unchecked Sendable { // all state is touched only on `queue`
    let tap: TapTransport
    let queue: DispatchQueue
    private var timer: DispatchSourceTimer?
    private var startTime: UInt64 = 0
    private var sent = 0
    private var buffer: [UInt8] = []
    /// (first report of the batch, wall-clock seconds when it was fed).
    private var batches: [(first: Int, time: Double)] = []

    init(tap: TapTransport, queue: DispatchQueue) {
        self.tap = tap
        self.queue = queue
        buffer.reserveCapacity(64 * 1024)
    }

    func start() {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now(), repeating: .milliseconds(2), leeway: .microseconds(500))
        t.setEventHandler { [unowned self] in tick() }
        queue.sync { startTime = DispatchTime.now().uptimeNanoseconds }
        timer = t
        t.resume()
    }

    func stop() -> (Int, Double) {
        queue.sync {
            timer?.cancel()
            timer = nil
            return (sent, Double(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9)
        }
    }

    /// Wall-clock seconds at which report `n` went into the host.
    func feedTime(of n: Int) -> Double? {
        queue.sync {
            guard n < sent else { return nil }
            var lo = 0, hi = batches.count - 1
            while lo < hi {
                let mid = (lo + hi + 1) / 2
                if batches[mid].first <= n { lo = mid } else { hi = mid - 1 }
            }
            return batches.isEmpty ? nil : batches[lo].time
        }
    }

    private func tick() {
        let elapsed = DispatchTime.now().uptimeNanoseconds - startTime
        let due = Int(elapsed / UInt64(1_000_000_000 / GatewayWorkload.reportsPerSecond))
        let count = min(due - sent, 2_000)
        guard count > 0 else { return }
        buffer.removeAll(keepingCapacity: true)
        for n in sent..<(sent + count) { appendReport(n) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        batches.append((sent, Double(now.tv_sec) + Double(now.tv_nsec) / 1e9))
        sent += count
        buffer.withUnsafeBytes { tap.feed($0) }
    }

    /// Report `n`: advertiser n % 1000 in round n / 1000; its manufacturer data (company
    /// 0xFFFF) holds the advertiser and the epoch (round / 10, so it changes once a second);
    /// a quarter also carry Battery service data, RSSI changes every report.
    private func appendReport(_ n: Int) {
        let i = n % GatewayWorkload.advertisers
        let round = n / GatewayWorkload.advertisers
        let epoch = round / 10
        var ad: [UInt8] = [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF, UInt8(i & 0xFF), UInt8(i >> 8), UInt8(epoch & 0xFF), UInt8((epoch >> 8) & 0xFF)]
        if i % 4 == 0 { ad += [0x04, 0x16, 0x0F, 0x18, UInt8(50 + i % 50)] }
        // LE Advertising Report (Vol 4, Part E, 7.7.65.2): one ADV_IND from a random static address.
        buffer += [0x04, 0x3E, UInt8(12 + ad.count), 0x02, 0x01, 0x00, 0x01]
        let address: UInt64 = 0xC1_00_00_00_00_00 | UInt64(i)
        for b in 0..<6 { buffer.append(UInt8(truncatingIfNeeded: address >> (8 * b))) }
        buffer.append(UInt8(ad.count))
        buffer += ad
        buffer.append(UInt8(bitPattern: Int8(-40 - n % 30)))
    }
}

/// mosquitto on a free local port, for one workload.
final class BenchBroker: @unchecked Sendable { // immutable after start
    let port: Int
    let process: Process

    private init(port: Int, process: Process) {
        self.port = port
        self.process = process
    }

    static func start(directory: URL) throws -> BenchBroker {
        let executable = ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let executable else { throw BenchError("mosquitto not found; apt-get install mosquitto (make deps does)") }
        let port = try freePort()
        let conf = directory.appendingPathComponent("mosquitto-\(port).conf")
        try "listener \(port) 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\nlog_dest stderr\nlog_type error\nlog_type notice\n"
            .write(to: conf, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["-c", conf.path]
        let err = Pipe()
        p.standardError = err
        try p.run()
        // Ready when it says it is running (it exits at once on a bad config).
        var text = ""
        while !text.contains(" running") {
            let data = err.fileHandleForReading.availableData
            if data.isEmpty { throw BenchError("mosquitto exited before it was running: \(text)") }
            text += String(decoding: data, as: UTF8.self)
        }
        return BenchBroker(port: port, process: p)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

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
/// lines and wakes whoever waits for a count.
final class BenchSubscriber: @unchecked Sendable { // `text`, `deviceCounts` and the waits are guarded by `condition`
    let process: Process
    private let condition = NSCondition()
    private var text: [String] = []
    private var partial = ""
    private var deviceCounts: [Substring: Int] = [:]
    private var deviceMessages = 0
    private var linkTopics = Set<String>()

    private init(process: Process) { self.process = process }

    static func start(port: Int, pattern: String) throws -> BenchSubscriber {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        p.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", pattern, "-t", "bench/probe", "-F", "%U %t %p"]
        let out = Pipe()
        p.standardOutput = out
        let s = BenchSubscriber(process: p)
        out.fileHandleForReading.readabilityHandler = { h in s.take(h.availableData) }
        try p.run()
        // Subscribed once a probe published after the start comes back.
        let pub = Process()
        pub.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        pub.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-t", "bench/probe", "-m", "1", "-r"]
        try pub.run()
        pub.waitUntilExit()
        guard s.wait(timeout: 10, until: { $0.text.contains { $0.contains(" bench/probe ") } }) else {
            throw BenchError("mosquitto_sub did not receive its probe within 10 s")
        }
        return s
    }

    private func take(_ data: Data) {
        guard !data.isEmpty else { return }
        condition.lock()
        partial += String(decoding: data, as: UTF8.self)
        var lines = partial.split(separator: "\n", omittingEmptySubsequences: false)
        partial = String(lines.removeLast())
        for line in lines {
            let fields = line.split(separator: " ", maxSplits: 2)
            if fields.count == 3 {
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
        condition.broadcast()
        condition.unlock()
    }

    private func wait(timeout: Double, until done: (BenchSubscriber) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !done(self) {
            if !condition.wait(until: deadline) { return done(self) }
        }
        return true
    }

    func waitForTopics(prefix: String, suffix: String, count: Int, timeout: Double) -> Bool {
        wait(timeout: timeout) { s in s.linkTopics.filter { $0.hasPrefix(prefix) && $0.hasSuffix(suffix) }.count >= count }
    }

    func waitForDeviceMessages(total: Int, timeout: Double) -> Bool {
        wait(timeout: timeout) { $0.deviceMessages >= total }
    }

    func deviceMessageCount() -> Int {
        condition.lock(); defer { condition.unlock() }
        return deviceMessages
    }

    func countsPerDeviceTopic() -> [Substring: Int] {
        condition.lock(); defer { condition.unlock() }
        return deviceCounts
    }

    func lines() -> [String] {
        condition.lock(); defer { condition.unlock() }
        return text
    }

    /// "1701234567.123456789 topic payload" into its parts.
    static func split(_ line: String) -> (Double, Substring, Substring)? {
        let f = line.split(separator: " ", maxSplits: 2)
        guard f.count == 3, let t = Double(f[0]) else { return nil }
        return (t, f[1], f[2])
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
