import Foundation

// Prints one JSON document: the machine, and for each workload our figure, Bumble's rate on
// the same bytes (when a Python with bumble is given), the ratio and the target.
//
//     swift run -c release Benchmarks --python .venv/bin/python [--quick]

var python: String? = ProcessInfo.processInfo.environment["BLE_PYTHON"]
/// A Python with the `TheengsDecoder` package, for the sensors workload's peer.
var theengsPython: String? = ProcessInfo.processInfo.environment["BLE_THEENGS_PYTHON"]
var runs = 5
var quick = false
var allocationsChild = false
var perConnectionChild = false
/// Workload keys to run (w1, w2, w3, w4, w5, dense, memory, gateway, gateway-single, gateway-sensors, fleet-hold, gatt-server, l2cap, l2cap-receive,
/// l2cap-send, l2cap-socket, hostile, hostile-indications, gateway-fleet, sensors, footprint, background, gatt-cache); all when empty.
var only: Set<String> = []
/// SDUs of each size for the l2cap workloads (`--sdus N`), instead of their defaults.
var sduCount: Int?
/// Only the l2cap cases of this SDU size (`--sdu-size N`).
var sduSize: Int?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--python": python = args.popFirst()
    case "--theengs-python": theengsPython = args.popFirst()
    case "--quick": runs = 1; quick = true
    case "--allocations": allocationsChild = true
    case "--per-connection": perConnectionChild = true
    case "--only": only = Set((args.popFirst() ?? "").split(separator: ",").map(String.init))
    case "--sdus": sduCount = args.popFirst().flatMap { Int($0) }
    case "--sdu-size": sduSize = args.popFirst().flatMap { Int($0) }
    default: break
    }
}

/// Child mode: this process runs with the malloc counter preloaded and prints one number.
if allocationsChild {
    guard let counter = MemoryWorkload.allocationCounter() else {
        FileHandle.standardError.write(Data("the malloc counter is not preloaded\n".utf8))
        exit(2)
    }
    let (routed, delivered) = try await MemoryWorkload.allocationsPerNotification(counter, notifications: 200_000)
    print(routed, delivered)
    exit(0)
}

/// Child mode: resident bytes per connection, measured in a fresh process (memory freed by
/// earlier workloads would otherwise be reused and hide the cost).
if perConnectionChild {
    let m = try await MemoryWorkload.perConnection(links: quick ? 32 : 256)
    print(m.extra["bytesPerConnection"] ?? 0, m.extra["attributes"] ?? 0)
    exit(0)
}

/// Runs this executable again with `arguments` (and `environment` added); its stdout as numbers.
func runChild(_ arguments: [String], environment: [String: String] = [:]) throws -> [Double]? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    p.arguments = arguments
    p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
}

struct Target: Codable {
    var description: String
    var met: Bool
}

struct Row: Codable {
    var workload: String
    var ours: Measurement
    var bumbleOperationsPerSecond: Double?
    /// Bumble's other figures for the workload (CPU seconds per operation, another API's rate).
    var bumbleFigures: [String: Double]?
    var ratio: Double?
    var target: Target?
    /// A peer other than Bumble (`TheengsDecoder`) and its rate on the same input.
    var peer: String?
    var peerOperationsPerSecond: Double?
}

var rows: [Row] = []
let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bench-\(getpid())")
try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: tmp) }

func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

/// `ratioAtLeast`: the target is our rate at least that many times Bumble's (none without
/// `--python`; not met when Bumble's side failed).
@MainActor func add(_ m: Measurement, bumble workload: String? = nil, input: [UInt8] = [], iterations: Int = 0, target: Target? = nil,
                    ratioAtLeast: Double? = nil) {
    var row = Row(workload: m.name, ours: m, target: target)
    if let python, let workload {
        let file = tmp.appendingPathComponent(workload + ".bin")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data(input))
        let figures = runBumbleFigures(python: python, workload: workload, input: file, iterations: iterations)
        row.bumbleOperationsPerSecond = figures?["operationsPerSecond"]
        row.bumbleFigures = figures?.filter { $0.key != "operationsPerSecond" }
        if row.bumbleFigures?.isEmpty == true { row.bumbleFigures = nil }
        row.ratio = row.bumbleOperationsPerSecond.map { m.operationsPerSecond / $0 }
    }
    if let ratioAtLeast, python != nil, workload != nil {
        row.target = Target(description: ">= \(Int(ratioAtLeast))x Bumble", met: row.ratio.map { $0 >= ratioAtLeast } ?? false)
    }
    log("\(m.name): \(Int(m.operationsPerSecond))/s \(m.extra)" + (row.bumbleOperationsPerSecond.map { " bumble \(Int($0))/s" } ?? ""))
    rows.append(row)
}

func rate(_ m: Measurement, atLeast target: Double) -> Target {
    Target(description: ">= \(Int(target)) per second", met: m.operationsPerSecond >= target)
}

@MainActor func selected(_ key: String) -> Bool { only.isEmpty || only.contains(key) }

// W1
if selected("w1") {
let scanCount = quick ? 50_000 : 200_000
let scanEvents = ScanWorkload.events(count: scanCount)
let w1 = ScanWorkload.run(stream: Array(scanEvents.joined()), packets: scanEvents.count, runs: runs)
add(w1, bumble: "scan", input: Array(scanEvents.prefix(20_000).joined()), iterations: 20_000, target: rate(w1, atLeast: 3_000_000))
let extendedEvents = ScanWorkload.extendedEvents(count: scanCount)
let w1x = ScanWorkload.run(name: "W1 scan (extended reports): H4 -> extended advertising report -> AD -> filter",
                           stream: Array(extendedEvents.joined()), packets: extendedEvents.count, runs: runs)
add(w1x, bumble: "scan", input: Array(extendedEvents.prefix(20_000).joined()), iterations: 20_000, target: rate(w1x, atLeast: 3_000_000))
}

// W2a alone, longer (for profiling)
if only.contains("w2a") { do {
    let stack = try await BenchStack.make(links: 1)
    add(try await NotifyWorkload.route(stack, notifications: 5_000_000, runs: runs))
    await stack.close()
} catch {
    log("W2a failed: \(error)")
} }

// W2b one subscriber alone, longer (for profiling)
if only.contains("w2b") { do {
    let stack = try await BenchStack.make(links: 1)
    add(try await NotifyWorkload.deliver(stack, name: "W2b notify delivered: 1 subscriber (notifications(for:))",
                                         links: 1, subscribers: 1, perLink: 2_560_000, runs: runs))
    await stack.close()
} catch {
    log("W2b failed: \(error)")
} }

// W2
if selected("w2") { do {
    let stack = try await BenchStack.make(links: 16)
    let w2a = try await NotifyWorkload.route(stack, notifications: quick ? 200_000 : 2_000_000, runs: runs)
    let link = stack.links[0]
    add(w2a, bumble: "notify", input: NotifyWorkload.batch([link], rounds: 20_000), iterations: 20_000, target: rate(w2a, atLeast: 5_000_000))
    let perLink = quick ? 25_600 : 256_000
    let deliverRuns = min(runs, 3)
    let one = try await NotifyWorkload.deliver(stack, name: "W2b notify delivered: 1 subscriber (notifications(for:))",
                                               links: 1, subscribers: 1, perLink: perLink, runs: deliverRuns)
    add(one, target: rate(one, atLeast: 5_000_000))
    let fanOut = try await NotifyWorkload.deliver(stack, name: "W2b notify delivered: 16 subscribers on one characteristic",
                                                  links: 1, subscribers: 16, perLink: perLink / 16, runs: deliverRuns)
    add(fanOut, target: rate(fanOut, atLeast: 1_000_000))
    let multiLink = try await NotifyWorkload.deliver(stack, name: "W2b notify delivered: 16 links x 1 subscriber",
                                                     links: 16, subscribers: 1, perLink: perLink / 16, runs: deliverRuns)
    add(multiLink, target: rate(multiLink, atLeast: 1_000_000))
    await stack.close()
} catch {
    log("W2 failed: \(error)")
} }

// W3
if selected("w3") { do {
    add(try await ReplayWorkload.heartRateSessions(quick ? 20 : 200, runs: min(runs, 3)))
    add(try await ReplayWorkload.freeRunning("phlash__blefun.btsnoop", runs: runs))
} catch {
    log("W3 failed: \(error)")
} }

// GATT server
if selected("gatt-server") {
    // Bumble's gatt_server.Server beside each row it has an equivalent of (bumble_bench.py):
    // a fiftieth of our count, best of 3.
    let n = quick ? 100_000 : 1_000_000
    let bumbleCount = n / 50
    add(GATTServerWorkload.notifications(clients: 1, values: n, runs: runs),
        bumble: "gatt_server_notify_1", iterations: bumbleCount, ratioAtLeast: 100)
    add(GATTServerWorkload.notifications(clients: 8, values: n / 8, runs: runs),
        bumble: "gatt_server_notify_8", iterations: bumbleCount, ratioAtLeast: 100)
    add(GATTServerWorkload.notificationsBesideAFullClient(values: n / 8, runs: runs))
    add(GATTServerWorkload.reads(count: n, runs: runs), bumble: "gatt_server_read", iterations: bumbleCount, ratioAtLeast: 100)
}

// W4
if selected("w4") { do {
    let w4 = try await ChurnWorkload.run(cycles: quick ? 1_000 : 10_000)
    let steady = w4.extra["openFDsEnd"] == w4.extra["openFDsStart"]
        && (w4.extra["residentBytesEnd"] ?? 0) - (w4.extra["residentBytesStart"] ?? 0) < 1_048_576
    add(w4, target: Target(description: "open descriptors and resident memory at the end equal to the start (within 1 MiB)", met: steady))
} catch {
    log("W4 failed: \(error)")
} }

// Background connections through the Filter Accept List
if selected("background") { do {
    let m = try await BackgroundConnectWorkload.run(devices: 50, rounds: quick ? 2 : 20)
    add(m, target: Target(description: "p99 within one advertising interval (100 ms) of appearing", met: (m.extra["p99Milliseconds"] ?? .infinity) < 100))
} catch {
    log("background connections failed: \(error)")
} }

// GATT cache on disk: connect -> first read with and without it
if selected("gatt-cache") { do {
    let m = try await GATTCacheWorkload.run(cycles: quick ? 20 : 200, directory: tmp)
    add(m, target: Target(description: "with the cache: fewer ATT requests than without (no discovery)",
                          met: (m.extra["attRequestsWithCache"] ?? .infinity) < (m.extra["attRequestsWithoutCache"] ?? 0)))
} catch {
    log("gatt-cache failed: \(error)")
} }

// W5
if selected("w5") { do {
    let w5 = try await LatencyWorkload.run(samples: quick ? 2_000 : 20_000, directory: tmp)
    add(w5, target: Target(description: "p50 < 20 µs", met: (w5.extra["p50Microseconds"] ?? .infinity) < 20))
} catch {
    log("W5 failed: \(error)")
} }

// Dense scene
if selected("dense") { do {
    let d = try await DenseWorkload.run(seconds: quick ? 10 : 60)
    add(d, target: Target(description: "end RSS within 1 MiB of after warm-up; device table <= live advertisers + the rotating tenth", met: d.extra["flat"] == 1))
} catch {
    log("dense failed: \(error)")
} }

// Memory
if selected("memory") { do {
    if let v = try runChild(["--per-connection"] + (quick ? ["--quick"] : [])), v.count == 2 {
        var m = Measurement(name: "memory: resident bytes per connection (discovered database)", operations: quick ? 31 : 255, seconds: 0, operationsPerSecond: 0)
        m.extra = ["bytesPerConnection": v[0], "attributes": v[1]]
        add(m)
    } else {
        log("resident bytes per connection: the child run failed")
    }
    if let library = MemoryWorkload.buildCounter(in: tmp) {
        if let values = try runChild(["--allocations"], environment: ["LD_PRELOAD": library]), values.count == 2 {
            let value = values[1]
            var m = Measurement(name: "memory: heap allocations per delivered notification (1 subscriber)", operations: 200_000, seconds: 0, operationsPerSecond: 0)
            m.extra = ["allocationsPerNotification": value, "allocationsPerRoutedNotificationWithoutSubscriber": values[0]]
            add(m, target: Target(description: "<= 2 allocations per notification", met: value <= 2))
        } else {
            log("allocation count: the child run failed")
        }
    } else {
        log("no C compiler: allocations per notification not measured")
    }
} catch {
    log("memory failed: \(error)")
} }

// Gateway at scale (docs/gateway.md): one gateway, then the fleet of `ble gateway` processes.
// `--only gateway-fleet` runs the fleet alone.
// `--only gateway-single` runs the first row alone (the one gateway, no small board).
if selected("gateway") || only.contains("gateway-fleet") || only.contains("gateway-sensors") || only.contains("gateway-single") { do {
    if selected("gateway") || only.contains("gateway-single") {
        let single = try await GatewayWorkload.single(seconds: quick ? 10 : 30, directory: tmp)
        add(single, target: Target(description: "<= 10 % of one core; resident <= 20 MiB",
                                   met: (single.extra["cpuPercentOfOneCore"] ?? .infinity) <= 10 && (single.extra["residentMiB"] ?? .infinity) <= 20))
    }
    if selected("gateway") {
        // A small board: the same run with the gateway under 1/5 of a core and 64 MiB.
        do {
            let group = try BenchCgroup.make(name: "ble-bench-gateway", cpuShare: 0.2, memoryBytes: 64 << 20)
            defer { group.remove() }
            let small = try await GatewayWorkload.single(seconds: quick ? 10 : 30, directory: tmp, cgroup: group)
            add(small, target: Target(description: "0 dropped, no restart, first advertisement published < 1 s after start",
                                      met: small.extra["dropped"] == 0 && small.extra["stillRunning"] == 1
                                          && (small.extra["startupToFirstAdvertisementMilliseconds"] ?? .infinity) < 1000))
        } catch let error as BenchError {
            log("gateway on a small board not measured: \(error)")
        }
    }
    if selected("gateway") || only.contains("gateway-sensors") {
        // The sensor formats of BLESensors: every reading decoded (a third decrypted), none refused.
        let sensors = try await GatewayWorkload.single(seconds: quick ? 10 : 30, directory: tmp, sensors: true)
        add(sensors, target: Target(description: "<= 10 % of one core, 0 dropped, 0 refused",
                                    met: (sensors.extra["cpuPercentOfOneCore"] ?? .infinity) <= 10 && sensors.extra["dropped"] == 0
                                        && sensors.extra["refusedMessages"] == 0 && (sensors.extra["decodedMessages"] ?? 0) > 0))
    }
    if selected("gateway") || only.contains("gateway-fleet") {
        let fleet = try await GatewayWorkload.fleet(gateways: 8, devices: 200, rounds: quick ? 5 : 20, directory: tmp)
        add(fleet, target: Target(description: "every device topic gets every message", met: fleet.extra["complete"] == 1))
    }
} catch {
    log("gateway failed: \(error)")
} }

// A fleet holding devices: 8 gateways, 1,000 advertisers heard by 3 each, failover after kills.
// BLE_BENCH_FLEET_BASE=PATH: another `ble` (an earlier build) measured first, in the same run.
if selected("fleet-hold") {
    let base = ProcessInfo.processInfo.environment["BLE_BENCH_FLEET_BASE"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
    let runs: [(URL?, String)] = (base.map { [($0, " (base \($0.path))")] } ?? []) + [(nil, "")]
    for (ble, label) in runs { do {
        let results = try await FleetHoldWorkload.run(advertisers: 1_000, rounds: quick ? 5 : 20, kills: quick ? 5 : 20, directory: tmp,
                                                      ble: ble, label: label)
        add(results[0], target: Target(description: "about one message per device per round, as one gateway (not 3)",
                                       met: (results[0].extra["messagesPerDevicePerRound"] ?? .infinity) < 1.5))
        add(results[1], target: Target(description: "failover max < 10 s", met: (results[1].extra["failoverMaxMilliseconds"] ?? .infinity) < 10_000
                                           && results[1].extra["notHeldAgainWithin30SecondsOrUnheld"] == 0))
    } catch {
        log("fleet-hold\(label) failed: \(error)")
    } }
}

// Footprint of the shipped binary: its size, `ble --version`, the idle gateway, per link.
if selected("footprint") { do {
    for m in try await FootprintWorkload.run(links: quick ? 8 : 32, directory: tmp) {
        let target: Target? = if m.extra["bytes"] != nil {
            Target(description: "<= 20 MB", met: m.extra["bytes"]! <= 20_000_000)
        } else if m.name.hasPrefix("footprint: idle ble gateway (") || m.name.hasPrefix("footprint: idle ble gateway beside") {
            Target(description: "resident <= 10 MiB, first advertisement < 1 s",
                   met: (m.extra["residentMiB"] ?? .infinity) <= 10 && (m.extra["startupToFirstAdvertisementMilliseconds"] ?? .infinity) < 1000)
        } else if m.name.hasPrefix("footprint: idle ble gateway under") {
            Target(description: "first advertisement < 1 s", met: (m.extra["startupToFirstAdvertisementMilliseconds"] ?? .infinity) < 1000)
        } else {
            nil
        }
        add(m, target: target)
    }
} catch {
    log("footprint failed: \(error)")
} }

// L2CAP credit-based channel data: segmentation + reassembly alone, receiving through the host
// (`--only l2cap-receive`) and sending from a task (`--only l2cap-send`); `--sdus N` sends N
// SDUs of each size (for instruction counts: the difference of two runs), `--sdu-size N` runs
// one size.
let l2capAll = selected("l2cap")
if l2capAll || only.contains("l2cap-receive") || only.contains("l2cap-send") { do {
    // One link at the radio's limit must cost far below 1 % of a core. The limit is about
    // 1.4 Mbit/s on the 2M PHY for SDUs that fill their K-frames and far lower for small ones
    // (every K-frame an air packet of its own): the share at 1.4 Mbit/s is reported beside it.
    func share(_ m: Measurement) -> Target {
        Target(description: "< 1 % of one core per link at the radio's limit for this SDU size (2M PHY; 1.42 Mbit/s for full K-frames)",
               met: (m.extra["cpuPercentOfOneCoreAtRadioLimit"] ?? .infinity) < 1)
    }
    let cases: [(label: String, size: Int, count: Int, perRound: Int, bumbleSDUs: Int)] = [
        ("65,535-byte SDUs, MPS 247", 65_535, quick ? 32 : 256, 32, 16),
        ("244-byte SDUs, MPS 247", 244, quick ? 20_000 : 200_000, 2_000, 20_000),
        ("20-byte SDUs, MPS 247", 20, quick ? 100_000 : 1_000_000, 10_000, 20_000),
    ]
    for c in cases where sduSize == nil || sduSize == c.size {
        let count = sduCount.map { max(1, $0) } ?? c.count
        let perRound = min(c.perRound, count)
        let sdus = L2CAPWorkload.sdus(size: c.size, count: l2capAll ? count : min(count, c.bumbleSDUs))
        let input = L2CAPWorkload.h4(Array(sdus.prefix(c.bumbleSDUs)), mps: 247, handle: 0x0040, cid: 0x0040)
        let packets = min(sdus.count, c.bumbleSDUs) * L2CAPWorkload.framesPerSDU(c.size, mps: 247)
        if l2capAll {
            let frames = L2CAPWorkload.frames(name: "l2cap frames: KFrameSegmenter -> KFrameReassembler, \(c.label) (SDU bytes)", sdus: sdus, mps: 247, runs: runs)
            add(frames, bumble: "l2cap_frames", input: input, iterations: packets, target: share(frames))
        }
        if l2capAll || only.contains("l2cap-receive") {
            for onChannel in [true, false] {
                let (host, hostInput, hostPackets) = try await L2CAPWorkload.host(
                    name: "l2cap host: H4 ACL K-frames -> HCIHost -> CreditBasedChannel.receive \(onChannel ? "on the channel's executor" : "from a task"), \(c.label) (SDU bytes)",
                    sduSize: c.size, mps: 247, perRound: perRound, rounds: count / perRound, runs: min(runs, 3), onChannel: onChannel)
                add(host, bumble: onChannel ? "l2cap_host" : nil, input: hostInput, iterations: min(hostPackets, packets), target: share(host))
            }
        }
        if l2capAll || only.contains("l2cap-send") {
            let send = try await L2CAPSendWorkload.run(
                name: "l2cap send: CreditBasedChannel.send from a task -> HCIHost ACL queue -> transport, \(c.label) (SDU bytes)",
                sduSize: c.size, mps: 247, perRound: perRound, rounds: count / perRound, runs: min(runs, 3))
            add(send, bumble: "l2cap_send", input: input, iterations: packets, target: share(send))
        }
    }
} catch {
    log("l2cap failed: \(error)")
} }

// Kernel L2CAP socket channels: the write alone against `send(_:)`'s queue hop per SDU, on an
// AF_UNIX SOCK_SEQPACKET stand-in for the L2CAP socket (`--only l2cap-socket`).
if selected("l2cap-socket") { do {
    for size in [20, 244] where sduSize == nil || sduSize == size {
        let count = sduCount.map { max(1, $0) } ?? (quick ? 20_000 : 200_000)
        for path in L2CAPSocketWorkload.Path.allCases {
            add(try await L2CAPSocketWorkload.run(path: path, sduSize: size, count: count, runs: min(runs, 3)))
        }
    }
} catch {
    log("l2cap-socket failed: \(error)")
} }

// Hostile peers (docs/reliability.md): floods at scale on one link, a healthy link beside it.
if selected("hostile") { do {
    for r in try await HostileWorkload.run(quick: quick) {
        let m = r.measurement
        let grew = (m.extra["peakResidentGrowthBytes"] ?? 0) - (m.extra["peakResidentGrowthAfterATenthBytes"] ?? 0)
        // 2 MiB: room for what a link's bounded queues may hold at a moment (64 KiB of tiny PDUs).
        add(m, target: r.bounded ? Target(description: "peak resident memory after all events within 2 MiB of the peak after a tenth", met: grew <= 2_097_152) : nil)
    }
} catch {
    log("hostile failed: \(error)")
} }

// One hostile case alone: a server that indicates without waiting for confirmations.
if only.contains("hostile-indications") { do {
    add(try await HostileWorkload.indicationsWithoutConfirmations(count: quick ? 1_000 : 10_000).measurement)
} catch {
    log("hostile-indications failed: \(error)")
} }

// Brand sensor formats against TheengsDecoder on the same payloads.
if selected("sensors") { do {
    let m = try SensorWorkload.run(rounds: quick ? 2_000 : 20_000, runs: runs)
    var row = Row(workload: m.name, ours: m, target: nil)
    if let theengsPython, let theirs = SensorWorkload.theengs(python: theengsPython, iterations: Int(m.extra["payloads"] ?? 0) * (quick ? 5 : 20)) {
        row.peer = "TheengsDecoder"
        row.peerOperationsPerSecond = theirs
        row.ratio = m.operationsPerSecond / theirs
        row.target = Target(description: ">= 20x TheengsDecoder", met: row.ratio.map { $0 >= 20 } ?? false)
    }
    log("\(m.name): \(Int(m.operationsPerSecond))/s" + (row.peerOperationsPerSecond.map { " TheengsDecoder \(Int($0))/s" } ?? ""))
    rows.append(row)
} catch {
    log("sensors failed: \(error)")
} }

let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
struct Report: Codable { var machine: [String: String]; var results: [Row] }
let data = try encoder.encode(Report(machine: machineDescription(), results: rows))
print(String(decoding: data, as: UTF8.self))
