import Testing
import Dispatch
import ATT
@testable import BLETestSupport
@testable import GATTClient
import BLEWire
import GATTServer

/// A peer that answers every request just before the 30 s ATT transaction timeout (Vol 3,
/// Part F, 3.3.3), one attribute per response: each request succeeds, so only an overall
/// limit per procedure ends the discovery, on virtual time (`ManualScheduler`).
@Suite(.timeLimit(.minutes(1)))
struct ProcedureDeadlineTests {
    /// 60 primary services with 128-bit UUIDs after GAP and GATT: at ATT_MTU 23 a Read By
    /// Group Type Response holds one 20-octet entry of a 128-bit service (Vol 3, Part F,
    /// 3.4.4.10), so discovery takes one request per service.
    static let manyServices = GATTDatabase(services: (1...60).map { n in
        GATTDatabase.Service(uuid: BluetoothUUID(uuid128: 0xA000_0000_0000_1000_8000_0000_0000_0000 | UInt128(n) << 96), characteristics: [])
    }, deviceName: "slow")

    /// A test bed at ATT_MTU 23 whose server answers through a `FaultInjectingATTServer`.
    static func bed(_ database: GATTDatabase, procedureTimeout: Duration?) throws -> (TestBed, FaultInjectingATTServer, ManualScheduler) {
        let holder = SchedulerHolder()
        let faultsHolder = FaultsHolder()
        let bed = TestBed(database, clientMTU: 23, scheduler: { holder.make($0) }, procedureTimeout: procedureTimeout) { server in
            let slow = FaultInjectingATTServer(wrapping: server, queue: server.queue)
            faultsHolder.server = slow
            return slow
        }
        return (bed, try #require(faultsHolder.server), try #require(holder.scheduler))
    }

    @Test func discoveryOfAPeerThatAnswersJustBeforeEachTimeoutEndsAtTheProcedureLimit() async throws {
        let (bed, slow, scheduler) = try Self.bed(Self.manyServices, procedureTimeout: GATTProcedures.defaultProcedureTimeout)
        slow.delayResponses(by: .seconds(29), on: scheduler)
        let peripheral = bed.peripheral
        let discovery = Task { () -> GATTError? in
            do throws(GATTError) { _ = try await peripheral.services(); return nil } catch { return error }
        }
        // Request 1 is Exchange MTU (answered at 29 s); the discovery starts then, with
        // requests 2, 3, ... answered 29 s apart. The 11th discovery request (request 12)
        // goes out at 319 s; the limit, 300 s after 29 s, passes at 329 s, before its answer.
        for n in 1...12 {
            #expect(await bed.server.waitUntil("request \(n) arrived") { $0.log.count == n })
            await scheduler.advance(by: .seconds(29))
        }
        let error = await discovery.value
        guard case .procedureTimeout(let progress, let limit, let peer) = error else {
            Issue.record("expected GATTError.procedureTimeout, got \(String(describing: error))")
            return
        }
        #expect(limit == .seconds(300))
        #expect(peer == BluetoothAddress("F0:F1:F2:F3:F4:F5"))
        #expect(progress.procedure == .discoverAllPrimaryServices)
        #expect(progress.range == .all)
        #expect(progress.responses == 10)
        // GAP (0x0001-0x0005) and GATT (0x0006-0x000B) share the first response (16-bit
        // UUIDs); the other nine responses hold one service each (0x000C...0x0014).
        #expect(progress.found == 11)
        #expect(progress.nextHandle == 0x0015)
        #expect(error!.description.hasPrefix("Discover All Primary Services on F0:F1:F2:F3:F4:F5 did not end within its limit of 300"))
        #expect(error!.description.hasPrefix("Discover All Primary Services on F0:F1:F2:F3:F4:F5 did not end within its limit of 300.0 seconds (over 0x0001-0xFFFF, 10 responses, 11 services, next handle 0x0015); the peer answers too slowly"))
        // Nothing more was asked or queued; once the late answer came the peripheral works again.
        #expect(await bed.server.receivedOpcodes().count == 12)
        #expect(await peripheral.bearer.queuedRequestCount == 0)
        #expect(await !peripheral.bearer.hasRequestInFlight)
        slow.delayResponses(by: nil, on: scheduler)
        #expect(try await peripheral.services().count == 62)
    }

    @Test func aLongReadEndsAtAConfiguredLimit() async throws {
        let (bed, slow, scheduler) = try Self.bed(.lab(), procedureTimeout: .seconds(60))
        let peripheral = bed.peripheral
        let pattern = try await peripheral.resolve(Lab.pattern)
        slow.delayResponses(by: .seconds(25), on: scheduler)
        let start = await bed.server.receivedOpcodes().count
        let read = Task { () -> GATTError? in
            do throws(GATTError) { _ = try await peripheral.read(Lab.pattern); return nil } catch { return error }
        }
        // The 600-octet pattern at ATT_MTU 23 takes a Read and 27 Read Blob Requests (Vol 3,
        // Part G, 4.8.3): 700 s at 25 s each. Read at 25 s, one Read Blob at 50 s, the
        // second due at 75 s: the 60 s limit ends it with 44 octets read.
        for n in 1...3 {
            #expect(await bed.server.waitUntil("request \(n) of the read arrived") { $0.log.count == start + n })
            await scheduler.advance(by: .seconds(25))
        }
        let error = await read.value
        guard case .procedureTimeout(let progress, let limit, _) = error else {
            Issue.record("expected GATTError.procedureTimeout, got \(String(describing: error))")
            return
        }
        #expect(limit == .seconds(60))
        #expect(progress.procedure == .readLong(handle: pattern.valueHandle))
        #expect(progress.responses == 2)
        #expect(progress.found == 44)
        #expect(error!.description.contains("Read Long Characteristic Values of handle \(pattern.valueHandle.hex)"))
    }

    @Test func withoutALimitOnlyTheTransactionTimeoutApplies() async throws {
        let (bed, slow, scheduler) = try Self.bed(.lab(), procedureTimeout: nil)
        let peripheral = bed.peripheral
        _ = try await peripheral.resolve(Lab.pattern)
        slow.delayResponses(by: .seconds(29), on: scheduler)
        let start = await bed.server.receivedOpcodes().count
        let read = Task { () -> Result<[UInt8], GATTError> in
            do throws(GATTError) { return .success(try await peripheral.read(Lab.pattern)) } catch { return .failure(error) }
        }
        // 28 requests, 29 s each: 812 s, and the whole value arrives.
        for n in 1...28 {
            #expect(await bed.server.waitUntil("request \(n) of the read arrived") { $0.log.count == start + n })
            await scheduler.advance(by: .seconds(29))
        }
        #expect(try await read.value.get() == (0..<600).map { UInt8(truncatingIfNeeded: $0) })
    }
}
