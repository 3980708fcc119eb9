import BLECore
import BLETestSupport
import Dispatch
import GATTClient
import Synchronization
import BLEWire
import GATTServer

/// Hostile peers at scale (docs/reliability.md, "Hostile controllers, peers and files"): each
/// case plays one misbehaving peer of the hostile-peer tests on the in-process virtual
/// controller (immediate time), many times over, and reports the host's CPU time per hostile
/// event, the growth of the process's resident high-water mark (`Meter`), what the app saw,
/// and what a healthy link beside it achieved during the flood against alone.
///
/// Each flood runs once to warm up, then alone (CPU, memory, what the app saw), then beside
/// the healthy link as fast as the host takes it and at the rate one link carries (the
/// healthy link's rate, against a stretch of it alone).
enum HostileWorkload {
    /// One case's figures, and whether its memory must stay bounded.
    struct Result {
        var measurement: Measurement
        var bounded: Bool
    }

    static func run(quick: Bool) async throws -> [Result] {
        let scale = quick ? 10 : 1
        var results: [Result] = []
        let stack = try await BenchStack.make(links: 2)
        let hostile = stack.links[0], healthy = stack.links[1]
        let controlPoint = CharacteristicIdentifier(uuid: "2A39", service: ServiceIdentifier(uuid: "180D"))
        let healthyServer = stack.servers[1], vc = stack.vc
        // Write Requests of 0x01 to the Heart Rate Control Point, each awaiting its response.
        let writes = HealthyLoad(step: { try await healthy.peripheral.write([UInt8]([0x01]), to: controlPoint) },
                                 tidy: { vc.clearRecords(); await healthyServer.clearRecords() })

        results.append(try await notificationFlood(stack, hostile, count: 100_000 / scale, policy: nil, healthy: writes))
        results.append(try await notificationFlood(stack, hostile, count: 100_000 / scale, policy: .unbounded, healthy: nil))
        results.append(try await oversizedPDUs(stack, hostile, count: 10_000 / scale, healthy: writes))
        results.append(try await parameterUpdates(stack, hostile, count: 10_000 / scale, healthy: writes))
        results.append(try await serviceChanged(stack, hostile, count: 10_000 / scale, healthy: writes))
        results.append(try await smpFlood(stack, hostile, count: 10_000 / scale, healthy: writes))
        await stack.close()
        results.append(try await indicationsWithoutConfirmations(count: 10_000 / scale))
        results.append(try await stalledPeer(sends: 10_000 / scale, outstanding: 3_000 / scale))
        results += try await bounds(quick: quick)
        return results
    }

    // MARK: Cases

    /// Handle Value Notifications (Vol 3, Part F, 3.4.7.1) of 20 value octets, 100 per job, at a
    /// subscriber that never reads: the default policy keeps the newest 1,024; `.unbounded`
    /// (the app's choice) keeps all, for comparison.
    static func notificationFlood(_ stack: BenchStack, _ link: BenchStack.Link, count: Int, policy: StreamBufferingPolicy?,
                                  healthy: HealthyLoad?) async throws -> Result {
        let perJob = 100
        let chunk = (0..<perJob).flatMap { i in
            notificationH4(handle: link.handle, valueHandle: link.valueHandle, value: [UInt8](repeating: UInt8(i), count: 20))
        }
        let name = policy == nil
            ? "hostile: notification flood at a subscriber that never reads (default policy, newest 1,024) (notifications)"
            : "hostile: the same flood with bufferingPolicy .unbounded, for comparison (notifications)"
        let m = try await measure(name, events: count, healthy: healthy) { meter, plan in
            let stream = try await link.peripheral.subscribe(to: link.measurement, bufferingPolicy: policy ?? .notificationDefault)
            let before = try await link.peripheral.droppedValueCount(for: link.measurement)
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            let dropped = try await link.peripheral.droppedValueCount(for: link.measurement) - before
            withExtendedLifetime(stream) {}
            return ["droppedAndCounted": Double(dropped), "heldForTheSubscriber": Double(count * plan.rounds - dropped)]
        }
        return Result(measurement: m, bounded: policy == nil)
    }

    /// Notifications of 600 octets, longer than the link's ATT_MTU of 517, in 27-byte ACL
    /// fragments (23 each), 10 PDUs per job: each is refused at its first fragment.
    static func oversizedPDUs(_ stack: BenchStack, _ link: BenchStack.Link, count: Int, healthy: HealthyLoad) async throws -> Result {
        let perJob = 10
        let pdu: [UInt8] = [0x1B, UInt8(link.valueHandle & 0xFF), UInt8(link.valueHandle >> 8)] + [UInt8](repeating: 0xEE, count: 597)
        let one = l2capH4(handle: link.handle, channelID: L2CAPChannelID.att, payload: pdu, fragment: 27)
        let chunk = (0..<perJob).flatMap { _ in one }
        let host = stack.central.host
        let m = try await measure("hostile: 600-octet notifications at ATT_MTU 517 in 27-byte fragments (PDUs)", events: count, healthy: healthy) { meter, plan in
            let before = await host.oversizedInboundPDUs
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            return ["refusedAtTheFirstFragment": Double(await host.oversizedInboundPDUs - before), "fragmentsPerPDU": 23]
        }
        return Result(measurement: m, bounded: true)
    }

    /// Connection Parameter Update Requests (Vol 3, Part A, 4.20: code 0x12, length 8,
    /// interval 0x0018-0x001F to 0x0100, latency 0, timeout 0x0258), 100 per job.
    static func parameterUpdates(_ stack: BenchStack, _ link: BenchStack.Link, count: Int, healthy: HealthyLoad) async throws -> Result {
        let perJob = 100
        let chunk = (0..<perJob).flatMap { i in
            let identifier = UInt8(i % 255 + 1), minimumInterval = UInt8(0x18 + i % 8)
            let request: [UInt8] = [0x12, identifier, 0x08, 0x00, minimumInterval, 0x00, 0x00, 0x01, 0x00, 0x00, 0x58, 0x02]
            return l2capH4(handle: link.handle, channelID: L2CAPChannelID.leSignaling, payload: request)
        }
        let m = try await measure("hostile: Connection Parameter Update Requests (requests)", events: count, healthy: healthy) { meter, plan in
            let (tally, dropped) = await feedCountingAnswers(stack, chunk, times: count / perJob, plan: plan, meter: meter)
            return ["responses": Double(tally.signaling), "leConnectionUpdateCommands": Double(tally.connectionUpdates),
                    "responsesDroppedAtAFullLinkQueue": Double(dropped)]
        }
        return Result(measurement: m, bounded: true)
    }

    /// Service Changed indications (Vol 3, Part G, 7.1) sent without waiting for confirmations,
    /// 100 per job, ranges inside the Device Information service; then one `services()`.
    static func serviceChanged(_ stack: BenchStack, _ link: BenchStack.Link, count: Int, healthy: HealthyLoad) async throws -> Result {
        let perJob = 100
        guard let sc = await stack.servers[0].valueHandle(of: GATTAttributeType.serviceChanged),
              let dis = try await link.peripheral.services().first(where: { $0.uuid == BluetoothUUID(uuid16: 0x180A) })
        else { throw BenchError("the hostile peer has no Service Changed characteristic or no Device Information service") }
        let chunk = (0..<perJob).flatMap { i in
            let start = dis.handle + UInt16(i % 4), end = dis.endHandle - UInt16(i % 3)
            let indication: [UInt8] = [0x1D, UInt8(sc & 0xFF), UInt8(sc >> 8), UInt8(start & 0xFF), UInt8(start >> 8), UInt8(end & 0xFF), UInt8(end >> 8)]
            return l2capH4(handle: link.handle, channelID: L2CAPChannelID.att, payload: indication)
        }
        let m = try await measure("hostile: Service Changed indications without waiting for confirmations (indications)", events: count, healthy: healthy) { meter, plan in
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            let confirmations = tally.confirmations
            _ = try await link.peripheral.services()
            await stack.vc.settle()
            tally.take(from: stack.vc)
            return ["confirmations": Double(confirmations), "readByGroupTypeRequestsOfTheNextServicesCall": Double(tally.readByGroupType)]
        }
        return Result(measurement: m, bounded: true)
    }

    /// A peer that never acknowledges its ACL packets (no Number Of Completed Packets; 8
    /// controller buffers, 3 links) while the app sends it `sends` Write Commands of 20 octets,
    /// keeping `outstanding` sends under way (more than the link's queue holds); the send
    /// timeout is 2 s. Beside it two healthy links send Write Commands, each acknowledged by
    /// its peer at once.
    static func stalledPeer(sends: Int, outstanding: Int) async throws -> Result {
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 8
        options.packetCompletion = .manual
        let vc = VirtualController(options: options)
        let peers = (0..<3).map { BenchStack.address(100 + $0) }
        let servers = peers.map { _ in GATTServer(database: .heartRateMonitor(), queue: vc.queue) }
        for (peer, server) in zip(peers, servers) {
            vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        }
        let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
        try await central.powerOn()
        var connected: [UInt16] = []
        for peer in peers {
            guard let handle = await (try await central.connect(peer, timeout: .seconds(5))).handle else { throw BenchError("no handle for \(peer)") }
            connected.append(handle)
        }
        let handles = connected
        let host = central.host
        await host.setACLLimits(sendTimeout: .seconds(2))
        let att = L2CAPChannelID.att
        // Write Command (Vol 3, Part F, 3.4.5.3: 0x52, handle 0x0003) with 17 value octets.
        let writeCommand: [UInt8] = [0x52, 0x03, 0x00] + [UInt8](repeating: 0x5A, count: 17)
        let stalled = handles[0]
        let turn = Counter()
        let healthy = HealthyLoad(step: {
            let i = 1 + turn.next() % 2
            try await host.sendL2CAP(handle: handles[i], channelID: att, payload: writeCommand)
            vc.completePackets(for: peers[i])
        }, tidy: { vc.clearRecords(); for s in servers { await s.clearRecords() } })

        var m = try await measure("hostile: a peer that never acknowledges, \(sends) Write Commands sent to it, \(outstanding) at a time (sends)", events: sends, healthy: healthy, paced: false) { meter, plan in
            let total = sends * plan.rounds
            meter.start()
            var outcomes: [String: Int] = [:]
            var queuedWhenFull = (bytes: 0, pdus: 0)
            await withTaskGroup(of: String.self) { group in
                @Sendable func send() async -> String {
                    do throws(LinkError) {
                        try await host.sendL2CAP(handle: stalled, channelID: att, payload: writeCommand)
                        return "sent"
                    } catch {
                        switch error {
                        case .queueFull(_, _, _, .pdus): return "queueFullAtThePDUBound"
                        case .queueFull: return "queueFullAtTheByteBound"
                        case .sendTimeout: return "sendTimeout"
                        default: return "otherError"
                        }
                    }
                }
                var started = 0, ended = 0
                while started < min(total, outstanding) { group.addTask(operation: send); started += 1 }
                for await outcome in group {
                    if outcome.hasPrefix("queueFull"), queuedWhenFull == (0, 0), let status = await host.aclLinkStatus(handle: stalled) {
                        queuedWhenFull = (status.queuedBytes, status.queuedPDUs)
                    }
                    outcomes[outcome, default: 0] += 1
                    ended += 1
                    if ended == total / 10 { meter.sampleTenth() }
                    if started < total { group.addTask(operation: send); started += 1 }
                }
            }
            meter.stop()
            let status = await host.aclLinkStatus(handle: stalled)
            var seen = outcomes.mapValues(Double.init)
            seen["queuedBytesWhenTheFirstSendWasRefused"] = Double(queuedWhenFull.bytes)
            seen["queuedPDUsWhenTheFirstSendWasRefused"] = Double(queuedWhenFull.pdus)
            seen["linkQueueLimitBytes"] = Double(await host.aclLinkQueueLimit)
            seen["linkQueueLimitPDUs"] = Double(await host.aclLinkQueuePDULimit)
            seen["stalledLinkPacketsInFlight"] = Double(status?.inFlight ?? -1)
            seen["stalledLinkQueuedBytesAfter"] = Double(status?.queuedBytes ?? -1)
            seen["aclFlowControlViolations"] = Double(vc.aclFlowControlViolations)
            return seen
        }
        await central.close()
        // The app's own share: as many tasks that only wait cost this much.
        m.extra["peakResidentGrowthOfAsManyParkedTasksBytes"] = Double(await parkedTasksPeak(outstanding))
        return Result(measurement: m, bounded: true)
    }

    /// The peak resident growth of `count` tasks that only wait, each parked on a
    /// continuation: what the app's waiting sends cost without the host.
    static func parkedTasksPeak(_ count: Int) async -> Int {
        let parked = Parked(expected: count)
        let meter = Meter()
        meter.start()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { await parked.park() } }
            await parked.untilAllParked()
            parked.resumeAll()
        }
        meter.stop()
        return meter.peakGrowth
    }

    final class Parked: Sendable {
        struct State {
            var waiting: [CheckedContinuation<Void, Never>] = []
            var whenAllParked: CheckedContinuation<Void, Never>?
        }
        let expected: Int
        let state = Mutex(State())
        init(expected: Int) { self.expected = expected }

        func park() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                state.withLock { s in
                    s.waiting.append(c)
                    if s.waiting.count == expected { s.whenAllParked?.resume(); s.whenAllParked = nil }
                }
            }
        }

        func untilAllParked() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                state.withLock { s in
                    if s.waiting.count == expected { c.resume() } else { s.whenAllParked = c }
                }
            }
        }

        func resumeAll() {
            for c in state.withLock({ s in defer { s.waiting = [] }; return s.waiting }) { c.resume() }
        }
    }

    // MARK: Running a case

    /// About how many small ACL packets one LE link carries per second (2M PHY, a 29-octet
    /// LL payload and its empty reply per packet; see README, l2cap): the most a hostile peer
    /// can send over the air.
    static let linkPacketsPerSecond = 1_900.0

    /// How a flood is sent: its events `rounds` times, as fast as the host takes them; or,
    /// with `packetsPerSecond`, at that rate for `seconds`.
    struct Plan {
        var rounds = 1
        var packetsPerSecond: Double?
        var seconds = 2.0
    }

    /// Runs `flood` alone (after a run to warm up), then the healthy load alone for 1 s (or as
    /// long as the flood), then both, the flood repeated for about as long, and (`paced`) the
    /// healthy load beside the flood at one link's rate for 2 s. `flood(meter, plan)` sets
    /// itself up, sends its events as `plan` says between `meter.start()` and `meter.stop()`,
    /// and returns what the app saw.
    static func measure(_ name: String, events: Int, healthy: HealthyLoad?, paced: Bool = true,
                        _ flood: (Meter, Plan) async throws -> [String: Double]) async throws -> Measurement {
        // Once unmeasured: the first run of a case also pays for what the process sets up once
        // (dispatch threads, allocator arenas, runtime metadata).
        _ = try await flood(Meter(), Plan())
        let alone = Meter()
        var extra = try await flood(alone, Plan())
        extra["cpuMicrosecondsPerEvent"] = alone.cpuSeconds * 1e6 / Double(events)
        extra["peakResidentGrowthBytes"] = Double(alone.peakGrowth)
        extra["peakResidentGrowthAfterATenthBytes"] = Double(alone.peakGrowthAtTenth)
        extra["residentGrowthAfterwardsBytes"] = Double(alone.retainedGrowth)
        if let healthy {
            let baseline = healthy.start()
            try await Task.sleep(for: .seconds(max(alone.wallSeconds, 1)))
            extra["healthyPerSecondAlone"] = try await baseline.stop()
            let rounds = min(100, Int((1 / alone.wallSeconds).rounded(.up)))
            let during = Meter()
            let load = healthy.start()
            _ = try await flood(during, Plan(rounds: rounds))
            extra["healthyPerSecondDuringTheFlood"] = try await load.stop()
            extra["floodRoundsBesideTheHealthyLink"] = Double(rounds)
            extra["floodSecondsBesideTheHealthyLink"] = during.wallSeconds
            extra["floodEventsPerSecondBesideTheHealthyLink"] = Double(events * rounds) / during.wallSeconds
            if paced {
                let load = healthy.start()
                _ = try await flood(Meter(), Plan(packetsPerSecond: linkPacketsPerSecond))
                extra["healthyPerSecondBesideTheFloodAtOneLinksRate"] = try await load.stop()
                extra["floodPacketsPerSecondAtOneLinksRate"] = linkPacketsPerSecond
            }
        }
        var m = Measurement(name: name, operations: events, seconds: alone.wallSeconds, operationsPerSecond: Double(events) / alone.wallSeconds)
        m.extra = extra
        return m
    }

    /// Feeds `chunk` (whole H4 packets) into the host `times` x `plan.rounds` times (or at the
    /// plan's rate), one job on the adapter queue each, as a transport's reads come in: other
    /// links' work runs between them. After each job `tally` takes the virtual controller's
    /// records of what the host sent, and the GATT servers forget theirs.
    static func feed(_ stack: BenchStack, _ chunk: [UInt8], times: Int, plan: Plan, meter: Meter, tally: inout Tally) async {
        let tap = stack.tap
        let total = plan.packetsPerSecond == nil ? times * plan.rounds : Int.max
        let interval = plan.packetsPerSecond.map { Double(packetCount(chunk)) / $0 }
        let start = ContinuousClock.now
        var i = 0
        while i < total {
            if let interval {
                guard interval * Double(i) < plan.seconds else { break }
                try? await Task.sleep(until: start + .seconds(interval * Double(i)), clock: .continuous)
            }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                stack.queue.async {
                    chunk.withUnsafeBytes { tap.feed($0) }
                    done.resume()
                }
            }
            tally.take(from: stack.vc)
            for server in stack.servers { await server.clearRecords() }
            if i == total / 10 { meter.sampleTenth() }
            i += 1
        }
        await stack.vc.settle()
        tally.take(from: stack.vc)
        for server in stack.servers { await server.clearRecords() }
    }

    /// `feed`, measured between `meter.start()` and `meter.stop()`, for a flood the host answers:
    /// what it sent, and how many of its answers a full link queue dropped.
    static func feedCountingAnswers(_ stack: BenchStack, _ chunk: [UInt8], times: Int, plan: Plan, meter: Meter) async -> (Tally, Int) {
        let host = stack.central.host
        var tally = Tally()
        let before = await host.failedOutboundPDUs.queueFull
        meter.start()
        await feed(stack, chunk, times: times, plan: plan, meter: meter, tally: &tally)
        meter.stop()
        return (tally, await host.failedOutboundPDUs.queueFull - before)
    }

    /// The H4 ACL packets in `bytes` (Vol 4, Part E, 5.4.2: a 4-octet header ending in the
    /// data length).
    static func packetCount(_ bytes: [UInt8]) -> Int {
        var count = 0, offset = 0
        while offset + 5 <= bytes.count {
            offset += 5 + (Int(bytes[offset + 3]) | Int(bytes[offset + 4]) << 8)
            count += 1
        }
        return count
    }

    /// What the host sent to the controller. Counted as the virtual controller's records are
    /// cleared, one job on its queue: kept, they would grow with the flood and be measured as
    /// the host's memory.
    struct Tally {
        /// LE signaling PDUs (channel 0x0005).
        var signaling = 0
        /// Handle Value Confirmations (0x1E) and Read By Group Type Requests (0x10) on ATT.
        var confirmations = 0, readByGroupType = 0
        /// LE Connection Update commands (0x2013).
        var connectionUpdates = 0
        /// Pairing Failed PDUs (0x05) on the Security Manager channel (0x0006).
        var pairingFailed = 0

        mutating func take(from vc: VirtualController) {
            let (frames, commands) = vc.queue.sync {
                defer { vc.clearRecords() }
                return (vc.l2capReceived, vc.commandsReceived)
            }
            for f in frames {
                if f.channelID == L2CAPChannelID.leSignaling { signaling += 1 }
                if f.channelID == L2CAPChannelID.att, f.payload.first == 0x1E { confirmations += 1 }
                if f.channelID == L2CAPChannelID.att, f.payload.first == 0x10 { readByGroupType += 1 }
                if f.channelID == L2CAPChannelID.securityManager, f.payload.first == 0x05 { pairingFailed += 1 }
            }
            connectionUpdates += commands.filter { $0.opcode.rawValue == 0x2013 }.count
        }
    }

    // MARK: The healthy side

    /// A well-behaved link's traffic, one `step` after another; `tidy` (every 256 steps)
    /// forgets the test beds' records so that they do not grow.
    struct HealthyLoad: Sendable {
        let step: @Sendable () async throws -> Void
        let tidy: @Sendable () async -> Void

        struct Running {
            let stopping: Flag
            let task: Task<Double, any Error>
            /// Steps per second.
            func stop() async throws -> Double {
                stopping.value.store(true, ordering: .relaxed)
                return try await task.value
            }
        }

        func start() -> Running {
            let stopping = Flag()
            let task = Task.detached { [step, tidy] in
                let start = DispatchTime.now().uptimeNanoseconds
                var n = 0
                while !stopping.value.load(ordering: .relaxed) {
                    try await step()
                    n += 1
                    if n % 256 == 0 { await tidy() }
                }
                return Double(n) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            }
            return Running(stopping: stopping, task: task)
        }
    }

    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.add(1, ordering: .relaxed).oldValue }
    }

    /// H4 ACL packets carrying one L2CAP PDU (basic header, Vol 3, Part A, 3.1) on
    /// `channelID`, in fragments of at most `fragment` octets: the first with
    /// Packet_Boundary_Flag 0b10, the rest 0b01 (Vol 4, Part E, 5.4.2).
    static func l2capH4(handle: UInt16, channelID: UInt16, payload: [UInt8], fragment: Int = 251) -> [UInt8] {
        let header: [UInt8] = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(channelID & 0xFF), UInt8(channelID >> 8)]
        let pdu = header + payload
        var out: [UInt8] = []
        var offset = 0
        while offset < pdu.count {
            let piece = pdu[offset..<min(offset + fragment, pdu.count)]
            let flags = handle | (offset == 0 ? 0x2000 : 0x1000)
            let packetHeader: [UInt8] = [0x02, UInt8(flags & 0xFF), UInt8(flags >> 8), UInt8(piece.count & 0xFF), UInt8(piece.count >> 8)]
            out += packetHeader
            out += piece
            offset += piece.count
        }
        return out
    }
}
