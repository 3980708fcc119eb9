import Foundation
import Testing
import BLETestSupport
import BLEWire
import BLECore
import ATT
import GATTClient
import BLESeed

/// Runs the articles' examples (ArticleExamples.swift) against fakes and recorded captures.
@Suite struct ArticleExampleTests {
    static let heartRate = ServiceIdentifier(uuid: "180D")
    static let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
    static let controlPoint = CharacteristicIdentifier(uuid: "2A39", service: heartRate)
    static let battery = ServiceIdentifier(uuid: "180F")
    static let level = CharacteristicIdentifier(uuid: "2A19", service: battery)

    static func monitor(name: String = "HRM sim", address: UInt64 = 0xC0_00_00_00_00_11) -> FakePeripheral {
        FakePeripheral(name: name, address: LEAddress(BluetoothAddress(rawValue: address), type: .random), services: [
            .init(heartRate, characteristics: [
                .init(measurement, properties: [.notify]),
                .init(controlPoint, properties: [.write]),
            ]),
            .init(battery, characteristics: [.init(level, properties: [.read], value: [64])]),
        ])
    }

    static func rig(_ peripherals: [FakePeripheral]) async throws -> (FakeCentral, Central) {
        let queue = AdapterExecutor(label: "article-examples")
        let fake = FakeCentral(queue: queue)
        let central = Central(backend: fake, queue: queue)
        peripherals.forEach(fake.add)
        fake.simulateStateChange(.poweredOn)
        try await bounded { await waitUntilPoweredOn(central) }
        return (fake, central)
    }

    static func capture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/captures/recorded").appendingPathComponent(name).path
    }

    @Test(.timeLimit(.minutes(1)))
    func gettingStarted() async throws {
        let monitor = Self.monitor()
        let (_, central) = try await Self.rig([monitor])
        let found = try #require(try await bounded { try await firstHeartRateMonitor(central) })
        #expect(found == monitor.address)
        let readings = Task { try await firstReadings(central, from: found, count: 2) }
        try await monitor.waitForSubscriber(to: Self.measurement)
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 70), for: Self.measurement)
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 71), for: Self.measurement)
        #expect(try await value(of: readings) == [70, 71])
        await central.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func gattAndNotifications() async throws {
        let monitor = Self.monitor()
        let (_, central) = try await Self.rig([monitor])
        let peripheral = try await central.connect(monitor.identifier)
        #expect(try await batteryPercent(peripheral) == 64)
        // GAP and GATT first (the fake's database layout), then the declared services, named
        // as the Assigned Numbers list names them.
        #expect(try await serviceNames(peripheral) == ["Generic Access (1800)", "Generic Attribute (1801)", "Heart Rate (180D)", "Battery Service (180F)"])
        // 0x80: Control Point Not Supported (Heart Rate Service 1.0, 3.3.1).
        try await monitor.answerWrites(to: Self.controlPoint) { _ in ATTErrorCode(0x80) }
        #expect(try await resetEnergyExpended(peripheral) == ATTErrorCode(0x80))
        try await monitor.answerWrites(to: Self.controlPoint) { _ in nil }
        #expect(try await resetEnergyExpended(peripheral) == nil)

        let average = Task { try await averageHeartRate(peripheral, samples: 2) }
        try await monitor.waitForSubscriber(to: Self.measurement)
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 60), for: Self.measurement)
        try await monitor.simulateNotification(HeartRateMeasurement(beatsPerMinute: 80), for: Self.measurement)
        #expect(try await value(of: average) == 70)
        await central.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func scanningAndConnecting() async throws {
        let first = Self.monitor(name: "One sim", address: 0xC0_00_00_00_00_21)
        let second = Self.monitor(name: "Two sim", address: 0xC0_00_00_00_00_22)
        let (fake, central) = try await Self.rig([first, second, FakePeripheral(name: "Other", address: LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_23), type: .random))])
        #expect(await isScanning(central) == false)
        let found = try await bounded { try await twoNearbyDevices(central) }
        #expect(Set(found.map(\.peripheral)) == [first.identifier, second.identifier])

        let events = await central.connectionEvents()
        let link = try await connectPersistently(central, to: first.address)
        #expect(await link.isConnected)
        try fake.simulateDisconnect(first, reason: .connectionTimeout)
        #expect(try await bounded { await firstDrop(events) } == .connectionTimeout)
        // While a scan has a subscriber the snapshot says the controller scans.
        let scan = await central.scan()
        let scanning = Task { () throws -> Bool in
            for try await _ in scan { return await isScanning(central) }
            return false
        }
        try await fake.controller.waitUntil("the scan") { $0.isScanning }
        fake.simulateDiscovery()
        #expect(try await value(of: scanning))
        await central.close()
    }

    /// The heart-rate capture holds 10 Handle Value Notifications
    /// (`tshark -r heart-rate-session.btsnoop -Y "btatt.opcode == 0x1b"` lists 10) and a
    /// controller that supports LE.
    @Test(.timeLimit(.minutes(1)))
    func replay() async throws {
        let path = Self.capture("heart-rate-session.btsnoop")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try notificationCount(inCapture: bytes) == 10)
        #expect(try await bounded { try await replayedControllerSupportsLE(path) })
    }

    /// Read Request (Vol 3, Part F, 3.4.4.3): opcode 0x0A, handle 0x0003.
    @Test func attDecoding() {
        #expect(decodedOpcode([0x0A, 0x03, 0x00]) == .readRequest)
        #expect(decodedOpcode([]) == nil)
    }
}

/// Every ```swift block of every article in Sources/*/*.docc is in ArticleExamples.swift
/// (compared line by line, indentation aside), so what the articles show is compiled.
@Suite struct ArticleSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func normalized(_ text: Substring) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    @Test func everyArticleBlockIsCompiled() throws {
        let examples = Self.normalized(Substring(try String(contentsOf: Self.root.appendingPathComponent("Tests/GATTClientTests/Docs/ArticleExamples.swift"), encoding: .utf8)))
        let fm = FileManager.default
        var articles = 0
        var blocks = 0
        for module in ["BLECore", "ATT", "GATTClient", "BLETestSupport"] {
            let catalog = Self.root.appendingPathComponent("Sources/\(module)/\(module).docc")
            for name in try fm.contentsOfDirectory(atPath: catalog.path) where name.hasSuffix(".md") {
                articles += 1
                let text = try String(contentsOf: catalog.appendingPathComponent(name), encoding: .utf8)
                for part in text.components(separatedBy: "```swift\n").dropFirst() {
                    guard let end = part.range(of: "```") else { continue }
                    let block = Self.normalized(part[..<end.lowerBound])
                    blocks += 1
                    let found = (0...max(0, examples.count - block.count)).contains { Array(examples[$0..<min(examples.count, $0 + block.count)]) == block }
                    #expect(found, "a block of \(module).docc/\(name) is not in ArticleExamples.swift: \(block.first ?? "")")
                }
            }
        }
        #expect(articles == 11)
        #expect(blocks >= 12)
    }
}
