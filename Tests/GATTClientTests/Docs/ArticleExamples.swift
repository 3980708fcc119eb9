// The code of every article in Sources/*/*.docc, compiled here and run by
// ArticleExampleTests; ArticleSnippetTests checks that each article block is in this file.
import Testing
import BLETestSupport
import BLEWire
import BLECore
import ATT
import GATTClient
import BLESeed

// ATT/ATT.docc/ATT.md
func decodedOpcode(_ bytes: [UInt8]) -> ATTOpcode? {
    guard let pdu = try? ATTPDU(bytes: bytes) else { return nil }
    return pdu.opcode
}

// BLECore/BLECore.docc/ConnectingAndReconnecting.md
func connectPersistently(_ central: Central, to device: LEAddress) async throws -> Connection {
    let backoff = ReconnectPolicy.Backoff.exponential(initial: .milliseconds(250), maximum: .seconds(10))
    return try await central.connect(device, timeout: .seconds(10), reconnect: .always(maxAttempts: 5, backoff: backoff))
}

// BLECore/BLECore.docc/ConnectingAndReconnecting.md
func firstDrop(_ events: AsyncStream<PeerConnectionEvent>) async -> HCIStatus? {
    for await change in events {
        if case .disconnected(let reason, _) = change.event { return reason }
    }
    return nil
}

// BLECore/BLECore.docc/Replay.md
func notificationCount(inCapture bytes: [UInt8]) throws -> Int {
    let capture = try BTSnoopReader(bytes: bytes)
    return capture.records.filter { record in
        guard record.direction == .received, case .acl(let packet) = record.packet,
              packet.boundary != .continuing, packet.data.count > 4 else { return false }
        // The L2CAP basic header (length, then channel 0x0004: ATT), then the ATT opcode
        // 0x1B, Handle Value Notification (Vol 3, Part A, 3.1; Part F, 3.4.7.1).
        return packet.data[2] == 0x04 && packet.data[3] == 0x00 && packet.data[4] == 0x1B
    }.count
}

// BLECore/BLECore.docc/Replay.md
func replayedControllerSupportsLE(_ capturePath: String) async throws -> Bool {
    let central = try await Central.open("replay:\(capturePath)")
    let info = await central.controllerInfo
    await central.close()
    return info?.supportsLE ?? false
}

// BLECore/BLECore.docc/Scanning.md
func twoNearbyDevices(_ central: Central) async throws -> [DiscoveredPeripheral] {
    var found: [DiscoveredPeripheral] = []
    for try await event in await central.scan(filter: ScanFilter(nameContains: "sim")) {
        if case .discovered(let device) = event { found.append(device) }
        if found.count == 2 { break }
    }
    return found
}

// BLECore/BLECore.docc/Scanning.md
func changesAndAHeartbeat(_ central: Central) async -> ScanStream {
    await central.scan(options: ScanOptions(allowDuplicates: true, duplicateInterval: .seconds(10)))
}

// BLECore/BLECore.docc/Scanning.md
func isScanning(_ central: Central) async -> Bool {
    await central.snapshot.isScanning
}

// BLETestSupport/BLETestSupport.docc/TestingWithFakes.md
@Test func findsTheMonitorAndReadsItsBattery() async throws {
    let queue = AdapterExecutor(label: "MyAppTests.rig")
    let fakeCentral = FakeCentral(queue: queue)
    let central = Central(backend: fakeCentral, queue: queue)
    let battery = ServiceIdentifier(uuid: "180F")
    let level = CharacteristicIdentifier(uuid: "2A19", service: battery)
    let monitor = FakePeripheral(name: "HRM", services: [
        .init(ServiceIdentifier(uuid: "180D"), characteristics: [
            .init(CharacteristicIdentifier(uuid: "2A37", service: ServiceIdentifier(uuid: "180D")), properties: [.notify]),
        ]),
        .init(battery, characteristics: [.init(level, properties: [.read, .notify], value: [87])]),
    ])
    fakeCentral.add(monitor)
    fakeCentral.simulateStateChange(.poweredOn)

    await waitUntilPoweredOn(central)
    let found = try #require(try await firstHeartRateMonitor(central))
    let peripheral = try await central.peripheral(found)
    #expect(try await batteryPercent(peripheral) == 87)

    try await monitor.failReads(of: level, with: .readNotPermitted)
    await #expect(throws: GATTError.self) { _ = try await batteryPercent(peripheral) }
    await central.close()
}

// GATTClient/GATTClient.docc/GATT.md
func batteryPercent(_ peripheral: Peripheral) async throws -> UInt8 {
    let battery = ServiceIdentifier(uuid: "180F")
    let level = CharacteristicIdentifier(uuid: "2A19", service: battery)
    return try await peripheral.read(level, as: BatteryLevel.self).percent
}

// GATTClient/GATTClient.docc/GATT.md
func serviceNames(_ peripheral: Peripheral) async throws -> [String] {
    try await peripheral.services().map(\.uuid.gattDisplayName)
}

// GATTClient/GATTClient.docc/GATT.md
func resetEnergyExpended(_ peripheral: Peripheral) async throws -> ATTErrorCode? {
    let controlPoint = CharacteristicIdentifier(uuid: "2A39", service: ServiceIdentifier(uuid: "180D"))
    do {
        try await peripheral.write([0x01], to: controlPoint)
        return nil
    } catch {
        return error.attErrorCode
    }
}

// GATTClient/GATTClient.docc/GATT.md
func connectToSlowSensor(_ link: Connection) async throws -> Peripheral {
    // A sensor on a 4 s connection interval with a large database: allow 15 minutes.
    try await Peripheral(connection: link, procedureTimeout: .seconds(900))
}

// GATTClient/GATTClient.docc/GATT.md
func describe(_ error: GATTError) -> String {
    if case .procedureTimeout(let progress, _, let peer) = error {
        return "\(peer): \(progress.procedure) stopped after \(progress.responses) responses"
    }
    return "\(error.peer.map { "\($0)" } ?? "-"): \(error.target.map { "\($0)" } ?? "-")"
}

// GATTClient/GATTClient.docc/GettingStarted.md
func waitUntilPoweredOn(_ central: Central) async {
    for await state in await central.stateEvents() where state == .poweredOn { break }
}

// GATTClient/GATTClient.docc/GettingStarted.md
func firstHeartRateMonitor(_ central: Central) async throws -> LEAddress? {
    let heartRate = BluetoothUUID(uuid16: 0x180D)
    for try await event in await central.scan(filter: ScanFilter(services: [heartRate])) {
        if case .discovered(let device) = event { return device.address }
    }
    return nil
}

// GATTClient/GATTClient.docc/GettingStarted.md
func firstReadings(_ central: Central, from monitor: LEAddress, count: Int) async throws -> [UInt16] {
    let peripheral = try await central.peripheral(monitor, reconnect: .always(maxAttempts: 5))
    let measurement = CharacteristicIdentifier(uuid: "2A37", service: ServiceIdentifier(uuid: "180D"))
    var readings: [UInt16] = []
    for try await reading in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) {
        readings.append(reading.beatsPerMinute)
        if readings.count == count { break }
    }
    try await peripheral.disconnect()
    return readings
}

// GATTClient/GATTClient.docc/Notifications.md
func averageHeartRate(_ peripheral: Peripheral, samples: Int) async throws -> Double {
    let measurement = CharacteristicIdentifier(uuid: "2A37", service: ServiceIdentifier(uuid: "180D"))
    var total = 0
    var count = 0
    for try await reading in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) {
        total += Int(reading.beatsPerMinute)
        count += 1
        if count == samples { break }
    }
    return Double(total) / Double(count)
}

// GATTClient/GATTClient.docc/Notifications.md, Bounded streams
func boundedReadings(_ peripheral: Peripheral, _ measurement: CharacteristicIdentifier, process: ([UInt8]) -> Void) async throws {
    let readings = try await peripheral.subscribe(to: measurement, bufferingPolicy: .bufferingNewest(64))
    for try await value in readings { process(value) }
    print("dropped while behind: \(readings.droppedCount)")
}

// BLECore/BLECore.docc/ConnectingAndReconnecting.md, Restoring links after a restart
func resumeRestoredLinks(_ restoration: Restoration, _ measurement: CharacteristicIdentifier) async throws {
    for try await event in try await restoration.restore() {
        if case .restored(let link) = event, let values = link.streams[measurement] {
            Task { for try await value in values { print(value) } }
        }
    }
}
