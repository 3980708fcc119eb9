import Testing
import Dispatch
import Synchronization
@testable import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire
import GATTServer

/// Cancelling the task of a GATT call that waits ends it at once with `GATTError.cancelled`,
/// and the peripheral goes on working: on the in-process virtual controller in manual time
/// (virtual time never moves, so only the cancellation can end these waits), with the lab
/// `GATTServer` behind a gate that holds the client's PDUs until the test opens it.
/// PDU opcodes are those of the Core Specification, Vol 3, Part F, 3.4 (0x02 Exchange MTU
/// Request, 0x0A Read Request, 0x12 Write Request, 0x52 Write Command).
@Suite(.timeLimit(.minutes(1)))
struct GATTCancellationTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_99), type: .random)
    static let peerText = "C0:11:22:33:44:99"

    static func isCancelled(_ error: (any Error)?) -> Bool {
        if let error = error as? GATTError, error.isCancellation { return true }
        Issue.record("expected GATTError.cancelled, got \(String(describing: error))")
        return false
    }

    // MARK: Preparing the bearer (Exchange MTU)

    @Test func cancelledMTUExchangeLeavesTheExchangeToFinish() async throws {
        let bed = try await LabBed.cancellation()
        bed.gate.close()
        let peripheral = bed.peripheral
        let read = Task { try await peripheral.read(Lab.scratch) }
        try await bed.held(1)
        #expect(bed.allATTPDUs.first?.first == 0x02)
        read.cancel()
        #expect(Self.isCancelled(await failure(of: read)))

        bed.gate.open()
        let value = try await bounded { try await peripheral.read(Lab.scratch) }
        #expect(value == [UInt8](repeating: 0, count: 512))
        #expect(bed.count(0x02) == 1, "Exchange MTU is sent once per link")
        #expect(await peripheral.mtu == 517)
    }

    @Test func cancelledCallsWaitingForThePreparationLeaveTheOthers() async throws {
        let bed = try await LabBed.cancellation()
        bed.gate.close()
        let peripheral = bed.peripheral
        let preparing = Task { try await peripheral.read(Lab.scratch) }
        try await bed.held(1)
        let waiting = Task { try await peripheral.read(Lab.scratch) }
        try await peripheral.readinessWaiters.waitForCount("a call waiting for the preparation") { $0 == 1 }
        #expect(await peripheral.readinessWaiterCount == 1)

        // A waiting call leaves at once; the preparing one goes on.
        waiting.cancel()
        guard case .cancelled(let operation, let target)? = await failure(of: waiting) as? GATTError else {
            Issue.record("expected GATTError.cancelled")
            return
        }
        #expect(operation == .waitingForPreparation)
        #expect(target == .server)
        #expect(await peripheral.readinessWaiterCount == 0)

        // The preparing call leaves too: a call waiting for it takes the preparation over,
        // joining the Exchange MTU already sent.
        let later = Task { try await peripheral.read(Lab.scratch) }
        try await peripheral.readinessWaiters.waitForCount("the later call waiting for the preparation") { $0 == 1 }
        #expect(await peripheral.readinessWaiterCount == 1)
        preparing.cancel()
        #expect(Self.isCancelled(await failure(of: preparing)))
        bed.gate.open()
        #expect(try await value(of: later) == [UInt8](repeating: 0, count: 512))
        #expect(bed.count(0x02) == 1)
    }

    // MARK: Requests

    /// Already cancellation-aware before: the caller leaves, the request stays in flight and
    /// the next one waits for its response (one request at a time, Vol 3, Part F, 3.3.2).
    @Test func cancelledReadKeepsOneRequestInFlight() async throws {
        let bed = try await LabBed.cancellation()
        let peripheral = bed.peripheral
        _ = try await bounded { try await peripheral.read(Lab.scratch) }
        let readsBefore = bed.count(0x0A)
        bed.gate.close()
        let read = Task { try await peripheral.read(Lab.scratch) }
        try await bed.held(1)
        read.cancel()
        #expect(Self.isCancelled(await failure(of: read)))
        let bearer = await peripheral.bearer
        #expect(await bearer.hasRequestInFlight)

        let next = bed.vc.task { try await peripheral.read(Lab.scratch) }
        try await bearer.requests.waitForCount("the next read queued behind the one in flight") { $0 == 1 }
        #expect(await bearer.queuedRequestCount == 1)
        await bed.vc.settle()
        #expect(bed.count(0x0A) == readsBefore + 1, "the next Read Request waits for the response")
        bed.gate.open()
        #expect(try await value(of: next) == [UInt8](repeating: 0, count: 512))
        #expect(bed.count(0x0A) == readsBefore + 2)
    }

    @Test func cancelledWriteWithoutResponseWaitingForABuffer() async throws {
        let bed = try await LabBed.cancellation { o in
            o.aclPacketCount = 1
            o.packetCompletion = .manual
        }
        let peripheral = bed.peripheral
        // Every request needs the one controller buffer back: return it until the set-up is done.
        let finished = Flag()
        let setup = Task {
            defer { finished.set() }
            return try await peripheral.read(Lab.scratch)
        }
        for _ in 0..<2_000 where !finished.isSet {
            bed.vc.completePackets()
            await bed.vc.settle()
        }
        _ = try await value(of: setup)
        bed.vc.completePackets()
        await bed.vc.settle()

        try await bounded { try await peripheral.write([0x01], to: Lab.scratch, type: .withoutResponse) }
        #expect(await bed.central.host.aclCredits == 0)
        let write = Task { try await peripheral.write([0x02], to: Lab.scratch, type: .withoutResponse) }
        try await bed.central.host.sendWaiters.waitForCount("the Write Command queued for a buffer") { $0 == 1 }
        #expect(await !bed.central.host.readyLinks.isEmpty)
        write.cancel()
        #expect(Self.isCancelled(await failure(of: write)))

        // The Write Command already queued still goes out; the next one after it.
        bed.vc.completePackets()
        await bed.vc.settle()
        let next = Task { try await peripheral.write([0x03], to: Lab.scratch, type: .withoutResponse) }
        try await bed.central.host.sendWaiters.waitForCount("the Write Command queued for a buffer") { $0 == 1 }
        #expect(await !bed.central.host.readyLinks.isEmpty)
        bed.vc.completePackets()
        try await value(of: next)
        await bed.vc.settle()
        #expect(bed.allATTPDUs.filter { $0.first == 0x52 }.map { $0.last } == [0x01, 0x02, 0x03])
        #expect(bed.vc.aclFlowControlViolations == 0)
    }

    // MARK: Subscriptions

    @Test func cancelledSubscriberWaitingForTheCCCDWrite() async throws {
        let bed = try await LabBed.cancellation()
        let peripheral = bed.peripheral
        // Discovered first (kept by the peripheral), so the CCCD write is the first PDU.
        _ = try await bounded { try await peripheral.descriptors(of: Lab.notifyCounter) }
        let handle = try #require(await bed.server.valueHandle(of: Lab.notifyCounter.uuid))
        bed.gate.close()
        let first = bed.vc.task { try await peripheral.subscribe(to: Lab.notifyCounter) }
        try await bed.held(1)
        #expect(bed.allATTPDUs.last?.first == 0x12)
        // The peripheral's own follow-up of the subscriber count may wait for the write too.
        await bed.vc.settle()
        let others = await peripheral.subscriptionWaiterCount(handle)
        let second = Task { try await peripheral.subscribe(to: Lab.notifyCounter) }
        let subscribers = try #require(await peripheral.subscriptions[handle]?.waiters)
        try await subscribers.waitForCount("the second subscriber parked") { $0 == others + 1 }
        #expect(await peripheral.subscriptionWaiterCount(handle) == others + 1)
        second.cancel()
        #expect(Self.isCancelled(await failure(of: second)))
        #expect(await peripheral.subscriptionWaiterCount(handle) == others)

        bed.gate.open()
        let stream = try await value(of: first)
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [7, 0, 0, 0]) == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [7, 0, 0, 0])
    }

    @Test func cancelledWriteAndAwaitNotification() async throws {
        let bed = try await LabBed.cancellation()
        let peripheral = bed.peripheral
        let scratch = try #require(await bed.server.valueHandle(of: Lab.scratch.uuid))
        let call = Task { try await peripheral.writeAndAwaitNotification([0x05], to: Lab.scratch, response: Lab.notifyCounter) }
        let server = bed.server
        try await bed.vc.waitUntil("the write applied") { _ in server.writes.contains { $0.handle == scratch } }
        await bed.vc.settle()
        call.cancel()
        guard case .cancelled(let operation, _)? = await failure(of: call) as? GATTError else {
            Issue.record("expected GATTError.cancelled")
            return
        }
        #expect(operation == .awaitingNotification)
        let value = try await bounded { try await peripheral.read(Lab.scratch) }
        #expect(value.first == 0x05)
        // The subscription made for the call ends with it: the CCCD is cleared.
        try await bed.vc.waitUntil("the CCCD cleared") { _ in server.cccdValues(of: Lab.notifyCounter.uuid) == [0] }
    }

    // MARK: Test support

    @Test func cancelledIndicationStopsWaitingForTheConfirmation() async throws {
        let bed = try await LabBed.cancellation()
        let peripheral = bed.peripheral
        let stream = try await bounded { try await peripheral.subscribe(to: Lab.indicateCounter, indications: true) }
        bed.gate.close()
        let server = bed.server
        let indicate = Task { await server.indicate(characteristic: Lab.indicateCounter.uuid, value: [1, 0, 0, 0]) }
        try await bed.held(1) // the Handle Value Confirmation (0x1E)
        indicate.cancel()
        guard case .success(let confirmed)? = await outcome(of: indicate) else {
            Issue.record("indicate() did not return within the bound once cancelled")
            return
        }
        #expect(confirmed == 0)
        // The late confirmation is matched to the abandoned indication; the next one counts.
        bed.gate.open()
        let next = try await bounded { await server.indicate(characteristic: Lab.indicateCounter.uuid, value: [2, 0, 0, 0]) }
        #expect(next == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [1, 0, 0, 0])
        #expect(try await values.next() == [2, 0, 0, 0])
    }
}

extension Peripheral {
    /// Calls waiting while another prepares the bearer.
    var readinessWaiterCount: Int {
        if case .preparing = readiness { return readinessWaiters.count }
        return 0
    }

    /// Calls waiting for the CCCD write of the characteristic at `handle`.
    func subscriptionWaiterCount(_ handle: UInt16) -> Int { subscriptions[handle]?.waiters.count ?? 0 }
}

extension GATTServer {
    /// The CCCD of `characteristic` on every link; call on the server's queue.
    func cccdValues(of characteristic: BluetoothUUID) -> [UInt16] {
        guard let cccd = cccdHandle(of: characteristic) else { return [] }
        return links.values.map { $0.cccd[cccd] ?? 0 }
    }
}

// MARK: - Bounded waits (outcome, value and bounded come from BLETestSupport)

/// The error `task` ended with (nil, with an issue recorded, when it succeeded or did not end
/// within the bound).
fileprivate func failure<T: Sendable>(of task: Task<T, any Error>, within seconds: Double = 10) async -> (any Error)? {
    switch await outcome(of: task, within: seconds) {
    case .failure(let error)?:
        return error
    case .success?:
        Issue.record("the call succeeded; it should have been cancelled")
        return nil
    case nil:
        Issue.record("the call did not end within \(seconds) s of being cancelled")
        return nil
    }
}

/// A flag set from any task.
fileprivate final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

extension LabBed {
    /// The bed of the cancellation suite: peer C0:11:22:33:44:99; neither Data Length nor 2M
    /// PHY requested, so the set-up after connecting is LE Read Remote Features alone.
    static func cancellation(_ configure: (inout VirtualController.Options) -> Void = { _ in }) async throws -> LabBed {
        var options = LabBed.Options()
        configure(&options.controller)
        options.peer = GATTCancellationTests.peer
        options.requestDataLengthExtension = false
        options.request2MPHY = false
        return try await LabBed(options)
    }

    /// The ATT PDUs the client sent on any link, in order.
    var allATTPDUs: [[UInt8]] { vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.att }.map(\.payload) }

    func count(_ opcode: UInt8) -> Int { allATTPDUs.filter { $0.first == opcode }.count }

    /// Returns once the gate holds `count` PDUs.
    func held(_ count: Int) async throws {
        let gate = self.gate
        try await vc.waitUntil("\(count) ATT PDUs held") { _ in gate.heldCount >= count }
    }
}
