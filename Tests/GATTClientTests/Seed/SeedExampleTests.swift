#if canImport(Glibc)
import Glibc
#endif
import Testing
import BLETestSupport
import BLECore
import GATTClient
import BLESeed

/// The seed's two examples, compiled as written (SeedMainExample.swift,
/// SeedTestingExample.swift), run against the in-process virtual controller.
@Suite(.serialized) struct SeedExampleTests {
    static let heartRate = ServiceIdentifier(uuid: "180D")
    static let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
    static let location = CharacteristicIdentifier(uuid: "2A38", service: heartRate)
    static let controlPoint = CharacteristicIdentifier(uuid: "2A39", service: heartRate)

    static func monitor() -> FakePeripheral {
        FakePeripheral(name: "HRM sim", services: [
            .init(heartRate, characteristics: [
                .init(measurement, properties: [.notify]),
                .init(location, properties: [.read], value: [0x01]),
                .init(controlPoint, properties: [.write]),
            ]),
        ])
    }

    /// `Central()` opens $BLE_DEVICE (here the fake's controller on a pseudo-terminal), waits
    /// for power, scans by ServiceIdentifier, connects by PeripheralIdentifier and prints one
    /// line per notification.
    @Test(.timeLimit(.minutes(1)))
    func mainExampleRunsAsWritten() async throws {
        let fake = FakeCentral(queue: AdapterExecutor(label: "seed-main"))
        let hrm = Self.monitor()
        fake.add(hrm)
        setenv("BLE_DEVICE", try fake.servePseudoTerminal(), 1)
        defer { unsetenv("BLE_DEVICE") }

        let run = Task { try await seedMainExample() }
        try await hrm.waitForSubscriber(to: Self.measurement, timeout: .seconds(20))
        // Heart Rate Measurement with flags 0x00 (8-bit value), then 0x01 (16-bit value).
        for bpm: UInt16 in [60, 72, 300] {
            try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: bpm), for: Self.measurement)
        }
        let lines = try await bounded(within: 20) { () -> [String] in
            var lines: [String] = []
            for await line in seedMainOutput.stream {
                lines.append(line)
                if lines.count == 3 { break }
            }
            return lines
        }
        #expect(lines == ["60 bpm", "72 bpm", "300 bpm"])
        #expect(fake.isConnected(hrm))
        run.cancel()
        try await value(of: run, within: 10)
    }

    /// `Central()` names `$BLE_DEVICE`, else hci0; a device that cannot be opened ends in the
    /// state that says why, with the reason.
    @Test(.timeLimit(.minutes(1)))
    func defaultDeviceAndOpenFailure() async throws {
        unsetenv("BLE_DEVICE")
        #expect(Central.defaultDevice == "hci0")
        setenv("BLE_DEVICE", "", 1)
        #expect(Central.defaultDevice == "hci0")
        setenv("BLE_DEVICE", "bogus:1", 1)
        defer { unsetenv("BLE_DEVICE") }
        #expect(Central.defaultDevice == "bogus:1")
        let central = Central()
        try await waitForState(.transportLost, of: central)
        let reason = try #require(await central.snapshot.reason)
        #expect(reason.contains("bogus:1"))
    }

    /// The testing example's central comes up on `simulateStateChange(.poweredOn)`, and the
    /// rest of the flow runs on it: scan, connect, read, write, notifications.
    @Test(.timeLimit(.minutes(1)))
    func testingExampleRunsAsWritten() async throws {
        let (fakeCentral, central) = seedTestingExample()
        try await waitForState(.poweredOn, of: central)

        let hrm = Self.monitor()
        fakeCentral.add(hrm)
        let identifier = try await bounded { () -> PeripheralIdentifier? in
            for try await event in await central.scan(services: [Self.heartRate]) {
                if case .discovered(let discovery) = event { return discovery.peripheral }
            }
            return nil
        }
        #expect(identifier == hrm.identifier)

        let peripheral = try await central.connect(try #require(identifier))
        #expect(try await peripheral.read(Self.location, as: BodySensorLocation.self) == .chest)
        try await peripheral.write([0x01], to: Self.controlPoint)
        #expect(try await hrm.writes(to: Self.controlPoint) == [[0x01]])

        let readings = try await peripheral.subscribe(to: Self.measurement, as: HeartRateMeasurement.self)
        let received = Task { () -> [UInt16] in
            var bpm: [UInt16] = []
            for try await reading in readings {
                bpm.append(reading.beatsPerMinute)
                if bpm.count == 2 { break }
            }
            return bpm
        }
        try await hrm.waitForSubscriber(to: Self.measurement)
        try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: 61), for: Self.measurement)
        try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: 62), for: Self.measurement)
        #expect(try await value(of: received) == [61, 62])
        await central.close()
    }
}

extension SeedExampleTests {
    /// The seed's `AsyncThrowingStream` form of `notifications(for:)`, chosen by the declared
    /// type, is the same subscription as the `NotificationStream` form (one CCCD, the same
    /// values) and ends with the link: a drop without reconnect throws `GATTError.disconnected`.
    @Test(.timeLimit(.minutes(1)))
    func asyncThrowingStreamFormSharesTheSubscription() async throws {
        let (fakeCentral, central) = seedTestingExample()
        try await waitForState(.poweredOn, of: central)
        let hrm = Self.monitor()
        fakeCentral.add(hrm)
        let peripheral = try await central.connect(hrm.identifier)

        let readings: AsyncThrowingStream<HeartRateMeasurement, Error> = peripheral.notifications(for: Self.measurement)
        let seedForm = Task { () async throws -> ([UInt16], (any Error)?) in
            var bpm: [UInt16] = []
            do {
                for try await reading in readings { bpm.append(reading.beatsPerMinute) }
                return (bpm, nil)
            } catch {
                return (bpm, error)
            }
        }
        try await hrm.waitForSubscriber(to: Self.measurement)
        let bytes = try await peripheral.subscribe(to: Self.measurement)
        let bytesForm = Task { () -> [[UInt8]] in
            var got: [[UInt8]] = []
            for try await value in bytes {
                got.append(value)
                if got.count == 2 { break }
            }
            return got
        }
        // Heart Rate Measurement, flags 0x00: an 8-bit value follows.
        try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: 61), for: Self.measurement)
        try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: 62), for: Self.measurement)
        #expect(try await value(of: bytesForm) == [[0x00, 61], [0x00, 62]])

        try fakeCentral.simulateDisconnect(hrm, reason: .connectionTimeout)
        let (bpm, end) = try await value(of: seedForm)
        #expect(bpm == [61, 62])
        guard case .disconnected(let peer, _)? = end as? GATTError else {
            Issue.record("the stream ended with \(String(describing: end)), not GATTError.disconnected")
            return
        }
        #expect(peer == hrm.address.address)
        await central.close()
    }
}

/// Returns once `central` reports `state` (bounded by real time).
func waitForState(_ state: AdapterState, of central: Central, within seconds: Double = 10) async throws {
    try await bounded(within: seconds) {
        for await s in await central.stateEvents() where s == state { return }
        throw StateStreamEnded(awaited: state)
    }
}

struct StateStreamEnded: Error, CustomStringConvertible {
    let awaited: AdapterState
    var description: String { "the central's state stream ended before \(awaited)" }
}
