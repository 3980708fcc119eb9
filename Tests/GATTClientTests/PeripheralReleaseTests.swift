import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import BLEWire
import GATTClient
import GATTServer

/// A Peripheral over a Connection must not keep that Connection alive: the link-state
/// observer it installs once held the Connection strongly from the Connection's own observer
/// list, so every Connection that had a Peripheral (with its host and waiters) outlived
/// `Central.close()`. Found by the HostStateful fuzz target on its shortest input (one options
/// octet 0x00, no injected packets: Fuzz/corpus/HostStateful/peripheral-connection-cycle).
@Suite struct PeripheralReleaseTests {
    @Test(.timeLimit(.minutes(1)))
    func connectionIsReleasedAfterCloseWhenAPeripheralUsedIt() async throws {
        let vc = VirtualController()
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        let peer = try #require(LEAddress("F0:5E:B1:00:00:01", type: .random))
        vc.addPeripheral(SimulatedPeripheral(address: peer, attServer: server))
        let central = try await vc.poweredOnCentral()

        weak var released: Connection?
        weak var releasedPeripheral: Peripheral?
        do {
            let link = try await central.connect(peer, timeout: .seconds(2))
            let peripheral = try await Peripheral(connection: link)
            let services = try await peripheral.services().map(\.uuid)
            #expect(services.contains(BluetoothUUID(uuid16: 0x180D)))
            try await link.disconnect()
            released = link
            releasedPeripheral = peripheral
        }
        await central.close()
        // The manual clock drops the cancelled timers (whose work holds the link) as it moves.
        vc.closeTransport()
        await vc.advance(by: .seconds(60))
        #expect(releasedPeripheral == nil)
        #expect(released == nil)
    }

    /// The CCCD write that follows the last subscriber's leaving runs in a task the link owns
    /// (as do the ATT bearer's transmissions): `Central.close()` ends it and waits for it.
    /// HostStateful saw the Peripheral outlive its input by a few milliseconds when that write
    /// was still on its way back through the procedures at the end of a run.
    @Test(.timeLimit(.minutes(1)))
    func closeEndsTheCCCDWriteAfterTheLastSubscriberLeft() async throws {
        let vc = VirtualController()
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        let peer = try #require(LEAddress("F0:5E:B1:00:00:01", type: .random))
        vc.addPeripheral(SimulatedPeripheral(address: peer, attServer: server))
        let central = try await vc.poweredOnCentral()

        weak var releasedPeripheral: Peripheral?
        do {
            let link = try await central.connect(peer, timeout: .seconds(2))
            let peripheral = try await Peripheral(connection: link)
            releasedPeripheral = peripheral
            let measurement = CharacteristicIdentifier(uuid: "2A37", service: ServiceIdentifier(uuid: "180D"))
            do {
                let values = try await peripheral.subscribe(to: measurement)
                // The peer stops answering: the Write Request that clears the CCCD once the
                // stream is gone stays unanswered (its 30 s timeout never passes here).
                try vc.dropATT(for: peer)
                _ = values
            }
            try await vc.waitUntil("the Write Request clearing the CCCD") { $0.droppedATT == 1 }
            // The CCCD write, and the bearer's transmission of it while its packet is in flight.
            let owned = await central.host.backgroundTasks.count
            #expect(owned >= 1)
            await central.close()
            #expect(await central.host.backgroundTasks.isEmpty)
        }
        vc.closeTransport()
        await vc.advance(by: .seconds(60))
        #expect(releasedPeripheral == nil)
    }
}
