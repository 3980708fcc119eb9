import Testing
import Dispatch
import ATT
import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire

/// A peer that dies in the middle of a discovery, a long read or a long write, on the
/// in-process virtual controller with the lab `GATTServer`: the pending call fails at once
/// with `GATTError.disconnected` (well inside the 30 s ATT transaction timeout), later calls
/// fail the same way, and nothing is left pending in the peripheral, the bearer, the host or
/// the central.
@Suite(.timeLimit(.minutes(1)))
struct FaultPeerDeathTests {
    /// ATT_MTU 23 (clientMTU 23): long values take many Read Blob / Prepare Write requests.
    static let options = LabBed.Options(peer: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_66), type: .random), clientMTU: 23)

    static func expectDisconnected(_ error: GATTError?, _ elapsed: Duration) {
        guard case .disconnected(let peer, let reason) = error else {
            Issue.record("expected GATTError.disconnected, got \(String(describing: error))")
            return
        }
        #expect(peer == BluetoothAddress("C0:11:22:33:44:66"))
        // Connection Timeout (0x08), the reason the controller reported.
        #expect(reason.contains("0x08"))
        #expect(elapsed < .seconds(5))
    }

    @Test func peerDiesMidDiscovery() async throws {
        let bed = try await LabBed(Self.options)
        // Characteristic discovery is a run of Read By Type Requests (Vol 3, Part G, 4.6.1).
        bed.peerDies(at: .readByTypeRequest, occurrence: 2)
        let peripheral = bed.peripheral
        let (error, elapsed) = await bed.failure { () async throws(GATTError) in try await peripheral.characteristics(of: Lab.service) }
        Self.expectDisconnected(error, elapsed)
        await bed.expectNothingLeftBehind()
        // Later calls fail at once, typed.
        let (again, _) = await bed.failure { () async throws(GATTError) in try await peripheral.services() }
        Self.expectDisconnected(again, .zero)
    }

    @Test func peerDiesMidLongRead() async throws {
        let bed = try await LabBed(Self.options)
        let peripheral = bed.peripheral
        _ = try await peripheral.resolve(Lab.pattern)
        // The 600-byte pattern at ATT_MTU 23: one Read Request then 27 Read Blob Requests.
        bed.peerDies(at: .readBlobRequest, occurrence: 5)
        let (error, elapsed) = await bed.failure { () async throws(GATTError) in try await peripheral.read(Lab.pattern) }
        Self.expectDisconnected(error, elapsed)
        await bed.expectNothingLeftBehind()
    }

    @Test func peerDiesMidLongWrite() async throws {
        let bed = try await LabBed(Self.options)
        let peripheral = bed.peripheral
        _ = try await peripheral.resolve(Lab.scratch)
        // 300 bytes at ATT_MTU 23: Prepare Write Requests of 18 bytes each (Vol 3, Part F, 3.4.6.1).
        bed.peerDies(at: .prepareWriteRequest, occurrence: 4)
        let value = [UInt8](repeating: 0xA5, count: 300)
        let (error, elapsed) = await bed.failure { () async throws(GATTError) in try await peripheral.writeLong(value, to: Lab.scratch) }
        Self.expectDisconnected(error, elapsed)
        await bed.expectNothingLeftBehind()
        // No Execute Write reached the server: the scratch value is untouched (512 zeros).
        #expect(await bed.server.value(of: Lab.scratch.uuid) == [UInt8](repeating: 0, count: 512))
        let scratch = await bed.server.valueHandle(of: Lab.scratch.uuid)
        #expect(await bed.server.appliedWrites().filter { $0.handle == scratch }.isEmpty)
    }

    @Test func peerDiesWhileANotificationStreamIsOpen() async throws {
        let bed = try await LabBed(Self.options)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [1, 0, 0, 0]) == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [1, 0, 0, 0])
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        do {
            _ = try await values.next()
            Issue.record("the stream must end with an error")
        } catch let error as GATTError {
            Self.expectDisconnected(error, .zero)
        }
        await bed.vc.settle()
        #expect(await bed.central.host.linkCount == 0)
    }
}

fileprivate extension LabBed {
    /// At the `occurrence`-th `opcode` from now, the peer vanishes (supervision timeout).
    func peerDies(at opcode: ATTOpcode, occurrence: Int) {
        let (vc, peer) = (self.vc, self.peer)
        faults.on(opcode, occurrence: occurrence) { try? vc.disconnect(peer, reason: .connectionTimeout) }
    }

    /// Runs `call`, returning its error and how long (real time) it took to fail.
    func failure<T: Sendable>(_ call: @escaping @Sendable () async throws(GATTError) -> T) async -> (GATTError?, Duration) {
        let start = ContinuousClock.now
        let task = Task { () async -> GATTError? in
            do throws(GATTError) { _ = try await call(); return nil } catch { return error }
        }
        let error = await task.value
        return (error, ContinuousClock.now - start)
    }

    /// Everything the link held is released.
    func expectNothingLeftBehind() async {
        await vc.settle()
        #expect(faults.swallowedCount == 1)
        #expect(vc.connections.isEmpty)
        let bearer = await peripheral.bearer
        #expect(await bearer.queuedRequestCount == 0)
        #expect(await !bearer.hasRequestInFlight)
        #expect(await peripheral.pendingReadinessWaiters == 0)
        #expect(await central.host.sentCommands.isEmpty)
        #expect(await central.host.waitingCommands.isEmpty)
        #expect(await central.host.linkCount == 0)
        #expect(await central.host.readyLinks.isEmpty)
        #expect(await central.host.aclCredits == central.host.aclPacketCount)
        #expect(await central.connectionsByHandle.isEmpty)
        #expect(await central.connectionsByPeer.isEmpty)
        #expect(await central.pendingConnect == nil)
        #expect(await !link.isConnected)
    }
}

extension HCIHost {
    /// Links the host still tracks.
    var linkCount: Int { links.count }
}

extension Peripheral {
    /// Callers parked while the bearer is being prepared.
    var pendingReadinessWaiters: Int {
        if case .preparing = readiness { return readinessWaiters.count }
        return 0
    }
}
