import Testing
import BLETestSupport
import BLEWire
import BLECore
import GATTClient
import GATTServer

/// The heart-rate scenario of the Bumble radio tests, on the in-process virtual controller:
/// scan by service, connect, discover, read Body Sensor Location, 10 changing notifications,
/// disconnect — the whole stack above HCI, in virtual time.
@Suite struct HeartRateVirtualControllerTests {
    @Test(.timeLimit(.minutes(1)))
    func heartRateFlow() async throws {
        let vc = VirtualController()
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        let peer = try #require(LEAddress("F0:5E:B1:00:00:01", type: .random))
        let advertising = AdvertisingData([
            .flags([.leGeneralDiscoverable, .brEDRNotSupported]),
            .completeServiceUUIDs16([0x180D]),
            .completeLocalName("Polar H10 sim"),
        ]).bytes
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: advertising, attServer: server))

        let central = try await vc.poweredOnCentral()

        // Scan for the Heart Rate service; advertising happens as virtual time moves.
        let scan = await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)]))
        let finder = vc.task { () -> DiscoveredPeripheral? in
            for try await event in scan { if case .discovered(let p) = event { return p } }
            return nil
        }
        // Time moves once the scan runs: advertising events come one interval after it starts.
        try await vc.waitUntil("the scan on") { $0.isScanning }
        await vc.advance(by: .milliseconds(500))
        let found = try #require(try await finder.value)
        #expect(found.address == peer)
        #expect(found.name == "Polar H10 sim")

        let link = try await central.connect(found.address)
        let peripheral = try await Peripheral(connection: link)
        let services = try await peripheral.services().map(\.uuid)
        #expect(services.contains(BluetoothUUID(uuid16: 0x180D)))

        let heartRate = ServiceIdentifier(uuid: "180D")
        let location = try await peripheral.read(CharacteristicIdentifier(uuid: "2A38", service: heartRate), as: BodySensorLocation.self)
        #expect(location == .chest)

        // Heart Rate Measurement, flags 0x00 (8-bit value): 60, 63, ... 87 bpm.
        let sent: [UInt16] = (0..<10).map { 60 + 3 * $0 }
        let readings = try await peripheral.subscribe(to: CharacteristicIdentifier(uuid: "2A37", service: heartRate))
        for bpm in sent { _ = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A37), value: [0x00, UInt8(bpm)]) }
        var received: [UInt16] = []
        for try await value in readings {
            received.append(try HeartRateMeasurement(gattValue: value).beatsPerMinute)
            if received.count == sent.count { break }
        }
        #expect(received == sent)

        try await link.disconnect()
        #expect(await !link.isConnected)
        await central.close()
    }
}
