import Testing
import Dispatch
import Synchronization
import BLECore
import BLETestSupport
import BLEWire
import BLETransport

/// `FaultInjectingTransport` over an in-memory pair: each fault does exactly what it says, in
/// each direction, and a seed fixes the faults.
///
/// Packets come from the Core Specification (Vol 4, Part E): HCI_Reset is opcode 0x0C03
/// with no parameters (7.3.2); its Command Complete is event 0x0E with parameters
/// Num_HCI_Command_Packets = 1, opcode 0x0C03 little-endian, Status 0x00 (7.7.14); the ACL
/// packet carries an L2CAP basic header (length 3, CID 0x0004, Vol 3, Part A, 3.1) and an
/// ATT Read Request for handle 0x0003 (Vol 3, Part F, 3.4.4.3: opcode 0x0A).
@Suite(.timeLimit(.minutes(1)))
struct FaultInjectingTransportTests {
    static let reset = HCIPacket.command(HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C03)))
    static let resetComplete = HCIPacket.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x03, 0x0C, 0x00]))
    static let readRequest = HCIPacket.acl(ACLDataPacket(handle: 0x0040, boundary: .firstNonFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]))

    /// A fault transport over the host end of a memory pair, both ends started on one queue,
    /// recording what each side receives.
    final class Log: Sendable {
        let events = Mutex<[TransportEvent]>([])
        func withLock<T>(_ body: (inout [TransportEvent]) -> T) -> T { events.withLock { body(&$0) } }
    }

    final class Bench: @unchecked Sendable { // the Mutex-protected logs are the only shared state
        let queue = DispatchQueue(label: "fault-test")
        let scheduler: ManualScheduler
        let faulty: FaultInjectingTransport
        let controller: MemoryTransport
        let atController = Log()
        let atHost = Log()

        init(_ plan: FaultPlan) throws {
            scheduler = ManualScheduler(queue: queue)
            let (host, controller) = MemoryTransport.pair(name: "bench")
            self.controller = controller
            faulty = FaultInjectingTransport(wrapping: host, scheduler: scheduler, plan: plan)
            let c = atController, h = atHost
            try controller.start(on: queue) { event in c.withLock { $0.append(event) } }
            try faulty.start(on: queue) { event in h.withLock { $0.append(event) } }
        }

        /// Lets everything already sent arrive (a few turns of the queue).
        func settle() async {
            for _ in 0..<6 { await withCheckedContinuation { c in queue.async { c.resume() } } }
        }

        func sendToController(_ p: HCIPacket) throws { try send(p, on: faulty) }
        func sendToHost(_ p: HCIPacket) throws { try send(p, on: controller) }

        private func send(_ p: HCIPacket, on transport: any HCITransport) throws {
            let failure = queue.sync { () -> TransportError? in
                do throws(TransportError) { try transport.send(p); return nil } catch { return error }
            }
            if let failure { throw failure }
        }

        var controllerPackets: [HCIPacket] { atController.withLock { $0.compactMap { if case .packet(let p) = $0 { p } else { nil } } } }
        var hostPackets: [HCIPacket] { atHost.withLock { $0.compactMap { if case .packet(let p) = $0 { p } else { nil } } } }
        var hostClose: TransportError?? { atHost.withLock { $0.lazy.compactMap { if case .closed(let e) = $0 { e } else { nil } }.first } }
    }

    @Test func scriptedFaultsTowardsTheController() async throws {
        let bench = try Bench(.script([
            FaultRule(.command(HCIOpcode(rawValue: 0x0C03)), .drop, after: 0, count: 1),
            FaultRule(.command(HCIOpcode(rawValue: 0x0C03)), .duplicate, after: 1, count: 1),
            FaultRule(.acl(.toController), .truncate(keeping: 5), count: 1),
            // Body byte 8 is the ATT opcode (4 bytes of HCI ACL header, 4 of L2CAP header).
            FaultRule(.acl(.toController), .corrupt(offset: 8, mask: 0x01), after: 1, count: 1),
        ]))
        try bench.sendToController(Self.reset) // dropped
        try bench.sendToController(Self.reset) // duplicated
        try bench.sendToController(Self.reset) // passes
        try bench.sendToController(Self.readRequest) // truncated
        try bench.sendToController(Self.readRequest) // corrupted: 0x0A -> 0x0B
        try bench.sendToController(Self.readRequest) // passes
        await bench.settle()
        let truncated = HCIPacket.acl(ACLDataPacket(handle: 0x0040, boundary: .firstNonFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x0A]))
        let corrupted = HCIPacket.acl(ACLDataPacket(handle: 0x0040, boundary: .firstNonFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x0B, 0x03, 0x00]))
        #expect(bench.controllerPackets == [Self.reset, Self.reset, Self.reset, truncated, corrupted, Self.readRequest])
        let stats = bench.faulty.statistics(.toController)
        #expect(stats.packets == 6 && stats.passed == 2 && stats.dropped == 1 && stats.duplicated == 1 && stats.truncated == 1 && stats.corrupted == 1)
        #expect(bench.faulty.appliedFaults.map(\.packetIndex) == [0, 1, 3, 4])
    }

    @Test func scriptedFaultsTowardsTheHost() async throws {
        let bench = try Bench(.script([FaultRule(.events, .drop, after: 1, count: 1), FaultRule(.events, .truncate(keeping: 1), after: 1)]))
        for _ in 0..<3 { try bench.sendToHost(Self.resetComplete) }
        await bench.settle()
        // First passes (both rules skip one), second is dropped (the first rule wins), third
        // truncated to Num_HCI_Command_Packets only.
        #expect(bench.hostPackets == [Self.resetComplete, .event(HCIEventPacket(code: 0x0E, parameters: [0x01]))])
        #expect(bench.faulty.statistics(.toHost).dropped == 1)
    }

    @Test func delayHoldsAPacketUntilTheSchedulerReachesIt() async throws {
        let bench = try Bench(.script([FaultRule(.events, .delay(.milliseconds(30)), count: 1)]))
        try bench.sendToHost(Self.resetComplete)
        try bench.sendToHost(Self.readRequest)
        await bench.settle()
        #expect(bench.hostPackets == [Self.readRequest])
        #expect(bench.faulty.delayedPacketCount == 1)
        await bench.scheduler.advance(by: .milliseconds(29))
        #expect(bench.hostPackets == [Self.readRequest])
        await bench.scheduler.advance(by: .milliseconds(1))
        // Delivered late: after the packet that was sent behind it.
        #expect(bench.hostPackets == [Self.readRequest, Self.resetComplete])
        #expect(bench.faulty.delayedPacketCount == 0)
    }

    @Test func corruptedLengthFieldIsDroppedAsUnparseable() async throws {
        // Body byte 1 of an event is Parameter_Total_Length.
        let bench = try Bench(.script([FaultRule(.events, .corrupt(offset: 1, mask: 0x01), count: 1)]))
        try bench.sendToHost(Self.resetComplete)
        try bench.sendToHost(Self.resetComplete)
        await bench.settle()
        #expect(bench.hostPackets == [Self.resetComplete])
        #expect(bench.faulty.statistics(.toHost).unparseable == 1)
    }

    @Test func cutReportsLostAndFailsLaterSends() async throws {
        let bench = try Bench(.script([FaultRule(.events, .cut, after: 1, count: 1)]))
        try bench.sendToHost(Self.resetComplete)
        try bench.sendToHost(Self.resetComplete) // cuts
        try? bench.sendToHost(Self.resetComplete) // the other end may already know
        await bench.settle()
        #expect(bench.hostPackets == [Self.resetComplete])
        guard case .some(.some(.lost(let endpoint, let reason))) = bench.hostClose else {
            Issue.record("expected .closed(.lost), got \(String(describing: bench.hostClose))")
            return
        }
        #expect(endpoint == "fault(bench:host)")
        #expect(reason.contains("cut"))
        #expect(throws: TransportError.self) { try bench.sendToController(Self.reset) }
        // The controller's end saw the inner transport close.
        #expect(bench.atController.withLock { $0.contains { if case .closed = $0 { true } else { false } } })
    }

    @Test func cutOnDemandFromATest() async throws {
        let bench = try Bench(.none)
        bench.faulty.cut(reason: "cable pulled")
        await bench.settle()
        #expect(bench.hostClose == .some(.lost(endpoint: "fault(bench:host)", reason: "cable pulled")))
        do {
            try bench.sendToController(Self.reset)
            Issue.record("send after a cut must fail")
        } catch let error as TransportError {
            #expect(error == .lost(endpoint: "fault(bench:host)", reason: "cable pulled"))
        }
    }

    @Test func sameSeedSameFaultsDifferentSeedDifferentFaults() async throws {
        func run(seed: UInt64) async throws -> ([AppliedFault], [HCIPacket]) {
            let plan = FaultPlan.random(RandomFaults(seed: seed, match: .acl(.toHost), drop: 0.1, duplicate: 0.1,
                                                     truncate: 0.1, corrupt: 0.1, corruptRegion: .payload))
            let bench = try Bench(plan)
            for i in 0..<400 {
                try bench.sendToHost(.acl(ACLDataPacket(handle: 0x0040, boundary: .firstNonFlushable,
                                                        data: [0x07, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00, UInt8(i & 0xFF), UInt8(i >> 8), 0, 0])))
            }
            await bench.settle()
            return (bench.faulty.appliedFaults, bench.hostPackets)
        }
        let (a, packetsA) = try await run(seed: 42)
        let (b, packetsB) = try await run(seed: 42)
        let (c, _) = try await run(seed: 43)
        #expect(a == b)
        #expect(packetsA == packetsB)
        #expect(a != c)
        // About 40 % of 400 packets get a fault; allow a wide band around 160.
        #expect((110...210).contains(a.count))
        // Payload corruption never touches the HCI or L2CAP headers (body bytes 0..<8).
        for f in a { if case .corrupt(let offset, _) = f.fault { #expect(offset >= 8) } }
    }
}
