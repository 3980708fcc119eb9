import Synchronization
import Testing
import BLEHost
import BLETestSupport
import ExampleKit

/// The examples' logic against the public fakes: what an application's own tests look like.
@Suite struct ExampleKitTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    static func rig() -> (FakeCentral, Central) {
        let queue = AdapterExecutor(label: "examples")
        let fake = FakeCentral(queue: queue)
        let central = Central(backend: fake, queue: queue)
        fake.simulateStateChange(.poweredOn)
        return (fake, central)
    }

    @Test(.timeLimit(.minutes(1)))
    func heartRateLoggerReportsEachReading() async throws {
        let (fake, central) = Self.rig()
        let monitor = FakePeripheral(name: "Strap", services: [
            .init(HeartRateLog.service, characteristics: [.init(HeartRateLog.measurement, properties: [.notify])]),
        ])
        fake.add(monitor)
        let lines = Lines()
        let run = Task { try await HeartRateLog.run(central, samples: 2) { lines.append($0) } }
        try await monitor.waitForSubscriber(to: HeartRateLog.measurement)
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 72), for: HeartRateLog.measurement)
        // RR-Interval 820/1024 s = 0.801 s (Heart Rate Service 1.0, 3.1.1.5: units of 1/1024 s).
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 73, rrIntervals: [820]), for: HeartRateLog.measurement)
        try await value(of: run)
        #expect(lines.all == ["found Strap at \(monitor.address)", "72 bpm", "73 bpm, RR 0.801 s"])
        #expect(!fake.isConnected(monitor))
        await central.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func scanToCSVWritesOneRowPerDevice() async throws {
        let (fake, central) = Self.rig()
        fake.add(FakePeripheral(name: "Desk, lamp", address: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random), services: [
            .init(ServiceIdentifier(uuid: "180F"), characteristics: []),
        ], rssi: -61))
        let lines = Lines()
        try await bounded { try await ScanCSV.run(central, devices: 1) { lines.append($0) } }
        #expect(lines.all == ["address,address_type,name,rssi_dbm,services", "C0:11:22:33:44:55,random,\"Desk, lamp\",-61,180F"])
        await central.close()
    }
}
