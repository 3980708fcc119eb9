import Testing
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire
import GATTServer

/// A controller that reports HCI_Hardware_Error (Vol 4, Part E, 7.7.16, event code 0x10),
/// on the in-process virtual controller in manual time: the host forgets every link, credit,
/// command and the scan at once; pending work fails with typed errors naming the code; each
/// connection reports the drop; after `powerOn()` (HCI_Reset and set-up again) the reconnect
/// policies restore both links and the scan runs again for its subscriber.
@Suite(.timeLimit(.minutes(1)))
struct HardwareErrorTests {
    static let backoff = ResubscribeAfterReconnectTests.backoff
    static let always = ResubscribeAfterReconnectTests.always
    static let second = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_88), type: .random)
    /// HCI_Reset (Vol 4, Part E, 7.3.2): OGF 0x03, OCF 0x0003.
    static let reset = HCIOpcode(rawValue: 0x0C03)
    static let pattern: [UInt8] = (0..<600).map { UInt8(truncatingIfNeeded: $0) }

    /// A second peer with the lab database, connected with `policy` and no link set-up requests.
    static func connectSecond(_ bed: LabBed, policy: ReconnectPolicy) async throws -> Connection {
        let server = GATTServer(database: .lab(), queue: bed.vc.queue)
        bed.vc.addPeripheral(SimulatedPeripheral(address: second, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        var parameters = ConnectionRequestParameters()
        parameters.requestDataLengthExtension = false
        parameters.request2MPHY = false
        let link = try await bed.central.connect(second, reconnect: policy, parameters: parameters)
        try await bed.vc.waitForCommand(HCIOpcode(rawValue: 0x2016), count: 2) // LE Read Remote Features of both links
        await bed.vc.settle()
        return link
    }

    @Test func hardwareErrorFailsPendingWorkAndPowerOnRestoresLinksAndScan() async throws {
        let bed = try await LabBed(policy: Self.always)
        let other = try await Self.connectSecond(bed, policy: Self.always)
        _ = try await bed.peripheral.characteristics(of: Lab.service)

        // A scan subscriber, and a read the peer never answers.
        let scan = await bed.central.scan()
        let scanning = Task { () -> (any Error)? in
            do { for try await _ in scan {} } catch { return error }
            return nil
        }
        try await bed.vc.waitUntil("the scan runs") { $0.isScanning }
        try bed.vc.dropATT(for: bed.peer)
        let read = CallsDuringOutageTests.read(bed)
        try await bed.vc.waitUntil("the Read Request was sent") { $0.droppedATTCount == 1 }
        var first = await bed.link.events().makeAsyncIterator()
        var second = await other.events().makeAsyncIterator()
        let resets = bed.vc.commandsReceived.filter { $0.opcode == Self.reset }.count

        bed.vc.hardwareError(code: 0x42)

        // The pending read fails at once with the typed error, naming the hardware error code.
        let reason = CallsDuringOutageTests.disconnectedReason(await read.outcome(bed))
        #expect(reason?.contains("Hardware Error 0x42") == true, "\(reason ?? "")")
        #expect(bed.vc.elapsed == .zero)
        // Both connections report the drop with 0x03 Hardware Failure; their policies will restore them.
        #expect(await first.nextLifecycle() == .disconnected(reason: .hardwareFailure, willReconnect: true))
        #expect(await second.nextLifecycle() == .disconnected(reason: .hardwareFailure, willReconnect: true))
        #expect(await bed.link.linkState == .reconnecting(attempt: 1))
        #expect(await other.linkState == .reconnecting(attempt: 1))
        #expect(await bed.central.state == .resetting)
        // Nothing of the old controller state is left in the host.
        #expect(await bed.central.host.linkCount == 0)
        #expect(await bed.central.host.aclCredits == bed.central.host.aclPacketCount)
        #expect(await bed.central.host.sentCommands.isEmpty)
        #expect(await bed.central.connectionsByHandle.isEmpty)
        #expect(await !bed.central.snapshot.isScanning)
        #expect(await bed.central.withScanner { $0.subscriberCount } == 1, "the scan subscriber stays")
        // New work waits for the reset: a connect fails at once; the scan subscriber stays.
        await #expect(throws: ConnectionError.adapterNotReady(.resetting)) { try await bed.central.connect(Self.second) }
        #expect(await bed.peripheral.linkDown)

        // No attempt while the controller is not reset, however long it takes.
        let creates = bed.createConnectionCount
        await bed.vc.advance(by: .seconds(10))
        #expect(bed.createConnectionCount == creates)

        try await bed.central.powerOn()
        #expect(bed.vc.commandsReceived.filter { $0.opcode == Self.reset }.count == resets + 1)
        #expect(await first.nextLifecycle() == .reconnecting(attempt: 1, delay: Self.backoff))
        #expect(await second.nextLifecycle() == .reconnecting(attempt: 1, delay: Self.backoff))
        try await bed.vc.waitUntil("the scan runs again") { $0.isScanning }
        await bed.vc.advance(by: Self.backoff)
        #expect(await first.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected? = await first.nextLifecycle() else { Issue.record("the first link was not restored"); return }
        // The second attempt waits for the first one's turn at the controller.
        await bed.vc.advance(by: .milliseconds(100))
        #expect(await second.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected? = await second.nextLifecycle() else { Issue.record("the second link was not restored"); return }
        #expect(bed.vc.connections.count == 2)
        #expect(await bed.central.state == .poweredOn)
        #expect(await bed.central.withScanner { $0.subscriberCount } == 1)
        #expect(await bed.central.snapshot.isScanning)

        // The peripheral carries on over the restored link.
        #expect(try await CallsDuringOutageTests.read(bed).outcome(bed)?.get() == Self.pattern)
        await bed.central.close()
        #expect(await scanning.value == nil)
    }
}

extension Scanner {
    /// Subscribers of the shared scan now.
    var subscriberCount: Int { subscribers.count }
}
