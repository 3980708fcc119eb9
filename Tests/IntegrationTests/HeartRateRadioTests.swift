import Testing
import BLETestSupport
import BLEWire
import BLECore
import GATTClient

/// The heart-rate flow end to end through our whole stack over H4/TCP, against Bumble's
/// controllers and GATT server (Fixtures/peers/scenarios/heart-rate.json).
@Suite struct HeartRateRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func discoverReadAndStreamTenReadings() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("hrm"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let peripheral = try await central.peripheral(peer, timeout: .seconds(10))

            let services = try await peripheral.services().map(\.uuid)
            for uuid: UInt16 in [0x180D, 0x180F, 0x180A] {
                #expect(services.contains(BluetoothUUID(uuid16: uuid)))
            }

            let heartRate = ServiceIdentifier(uuid: "180D")
            // The scenario's Body Sensor Location is 0x01 (chest).
            let location = try await peripheral.read(CharacteristicIdentifier(uuid: "2A38", service: heartRate), as: BodySensorLocation.self)
            #expect(location == .chest)

            let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
            var readings: [HeartRateMeasurement] = []
            for try await reading in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) {
                readings.append(reading)
                if readings.count == 10 { break }
            }
            #expect(readings.count == 10)
            // The generator changes the value from one notification to the next.
            #expect(Set(readings.map(\.beatsPerMinute)).count > 1)
            #expect(readings.allSatisfy { (30...220).contains($0.beatsPerMinute) })

            await central.close()
        }
    }
}
