import Testing
import BLETestSupport
import BLEWire
@testable import BLECore
import ATT
import GATTClient
import BLESeed

/// FakeCentral and FakePeripheral: each scripted behaviour, seen through a real Central.
@Suite struct FakeCentralTests {
    static let battery = ServiceIdentifier(uuid: "180F")
    static let level = CharacteristicIdentifier(uuid: "2A19", service: battery)
    static let heartRate = SeedExampleTests.heartRate
    static let measurement = SeedExampleTests.measurement
    static let controlPoint = SeedExampleTests.controlPoint

    /// A fake and a central on one queue, powered on.
    static func rig() async throws -> (FakeCentral, Central) {
        let queue = AdapterExecutor(label: "fake-central-tests")
        let fake = FakeCentral(queue: queue)
        let central = Central(backend: fake, queue: queue)
        #expect(await central.state == .unknown)
        fake.simulateStateChange(.poweredOn)
        try await waitForState(.poweredOn, of: central)
        return (fake, central)
    }

    static func batteryPeripheral(name: String = "Battery sim", address: UInt64 = 0xC0_00_00_00_00_02) -> FakePeripheral {
        FakePeripheral(name: name, address: LEAddress(BluetoothAddress(rawValue: address), type: .random), services: [
            .init(battery, characteristics: [.init(level, properties: [.read, .notify], value: [100])]),
        ], rssi: -42)
    }

    static func firstDiscovery(_ central: Central, services: [ServiceIdentifier]) async throws -> DiscoveredPeripheral? {
        try await bounded { () -> DiscoveredPeripheral? in
            for try await event in await central.scan(services: services) {
                if case .discovered(let discovery) = event { return discovery }
            }
            return nil
        }
    }

    /// Every scripted state reaches the central's state stream, in order; power off ends a
    /// running scan with `adapterNotReady(.poweredOff)`; Hardware Error gives `.resetting`
    /// and the next power on resets the controller over HCI.
    @Test(.timeLimit(.minutes(1)))
    func stateChanges() async throws {
        let (fake, central) = try await Self.rig()
        let scan = await central.scan()
        let scanEnd = Task { () -> ScanError? in
            do { for try await _ in scan {} } catch let error as ScanError { return error }
            return nil
        }
        try await fake.controller.waitUntil("the scan") { $0.isScanning }
        fake.simulateStateChange(.poweredOff)
        try await waitForState(.poweredOff, of: central)
        #expect(try await value(of: scanEnd) == .adapterNotReady(.poweredOff))
        #expect(await central.snapshot.isPowered == false)

        let resets = fake.controller.commandsReceived.filter { $0.opcode == HCIOpcode(rawValue: 0x0C03) }.count
        fake.simulateStateChange(.poweredOn)
        try await waitForState(.poweredOn, of: central)
        fake.simulateStateChange(.unauthorized)
        try await waitForState(.unauthorized, of: central)
        #expect(await central.snapshot.isAuthorized == false)
        fake.simulateStateChange(.unsupported)
        try await waitForState(.unsupported, of: central)
        fake.simulateStateChange(.poweredOn)
        try await waitForState(.poweredOn, of: central)
        fake.simulateStateChange(.resetting)
        try await waitForState(.resetting, of: central)
        fake.simulateStateChange(.poweredOn)
        try await waitForState(.poweredOn, of: central)
        // HCI_Reset (Vol 4, Part E, 7.3.2, opcode 0x0C03) once for each of the three power-ons.
        #expect(fake.controller.commandsReceived.filter { $0.opcode == HCIOpcode(rawValue: 0x0C03) }.count == resets + 3)
        await central.close()
    }

    /// Declared peripherals are discovered with their name, services and RSSI; a scan by
    /// service finds only the one that advertises it; a removed one is not seen again.
    @Test(.timeLimit(.minutes(1)))
    func discoveries() async throws {
        let (fake, central) = try await Self.rig()
        let hrm = SeedExampleTests.monitor()
        let battery = Self.batteryPeripheral()
        fake.add(hrm)
        fake.add(battery)

        let found = try #require(try await Self.firstDiscovery(central, services: [Self.battery]))
        #expect(found.peripheral == battery.identifier)
        #expect(found.name == "Battery sim")
        #expect(found.rssi == -42)
        #expect(found.advertisingData.serviceUUIDs.contains(BluetoothUUID(uuid16: 0x180F)))

        fake.remove(battery)
        let scan = await central.scan()
        let seen = Task { () -> [PeripheralIdentifier] in
            var seen: [PeripheralIdentifier] = []
            for try await event in scan {
                if case .discovered(let p) = event { seen.append(p.peripheral) }
                if seen.count == 1 { break }
            }
            return seen
        }
        fake.simulateDiscovery()
        #expect(try await value(of: seen) == [hrm.identifier])
        await central.close()
    }

    /// A scripted connection failure fails `connect` with the controller's status; the next
    /// attempt connects.
    @Test(.timeLimit(.minutes(1)))
    func connectionFailure() async throws {
        let (fake, central) = try await Self.rig()
        let battery = Self.batteryPeripheral()
        fake.add(battery)
        fake.failNextConnection(status: .connectionFailedToBeEstablished)
        await #expect(throws: GATTError.connection(.failed(peer: battery.address, status: .connectionFailedToBeEstablished))) {
            _ = try await central.connect(battery.identifier)
        }
        let peripheral = try await central.connect(battery.identifier)
        #expect(try await peripheral.read(Self.level, as: BatteryLevel.self) == BatteryLevel(percent: 100))
        #expect(fake.isConnected(battery))
        await central.close()
    }

    /// A scripted disconnect reaches the central with its reason; with a reconnect policy the
    /// link comes back and the notification stream carries on.
    @Test(.timeLimit(.minutes(1)))
    func disconnectAndReconnect() async throws {
        let (fake, central) = try await Self.rig()
        let battery = Self.batteryPeripheral()
        fake.add(battery)
        let events = await central.connectionEvents()
        let peripheral = try await central.connect(battery.identifier, reconnect: .custom { _, attempt in attempt <= 3 ? .zero : nil })
        let levels = try await peripheral.subscribe(to: Self.level, as: BatteryLevel.self)
        let received = Task { () -> [UInt8] in
            var got: [UInt8] = []
            for try await level in levels {
                got.append(level.percent)
                if got.count == 2 { break }
            }
            return got
        }
        try await battery.waitForSubscriber(to: Self.level)
        try await battery.simulateNotification(BatteryLevel(percent: 90), for: Self.level)

        try fake.simulateDisconnect(battery, reason: .connectionTimeout)
        let story = try await bounded { () -> [ConnectionEvent] in
            var story: [ConnectionEvent] = []
            for await e in events {
                switch e.event {
                case .disconnected, .reconnecting: story.append(e.event)
                case .connected where !story.isEmpty: story.append(e.event); return story
                default: break
                }
            }
            return story
        }
        #expect(story.first == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(story.count == 3)
        // After the restore the CCCD is written again; the next notification arrives.
        try await battery.waitForSubscriber(to: Self.level)
        try await battery.simulateNotification(BatteryLevel(percent: 80), for: Self.level)
        #expect(try await value(of: received) == [90, 80])
        await central.close()
    }

    /// Values set on the peripheral are read back; scripted read errors and write answers
    /// come back as ATT Error Responses with their codes.
    @Test(.timeLimit(.minutes(1)))
    func readAndWriteAnswers() async throws {
        let (fake, central) = try await Self.rig()
        let hrm = SeedExampleTests.monitor()
        fake.add(hrm)
        let peripheral = try await central.connect(hrm.identifier)

        try await hrm.setValue(BodySensorLocation.wrist, for: SeedExampleTests.location)
        #expect(try await peripheral.read(SeedExampleTests.location, as: BodySensorLocation.self) == .wrist)
        try await hrm.failReads(of: SeedExampleTests.location, with: .readNotPermitted)
        await #expect(throws: GATTError.self) { _ = try await peripheral.read(SeedExampleTests.location) }
        do { _ = try await peripheral.read(SeedExampleTests.location) } catch { #expect(error.attErrorCode == .readNotPermitted) }
        try await hrm.failReads(of: SeedExampleTests.location, with: nil)
        #expect(try await peripheral.read(SeedExampleTests.location) == [BodySensorLocation.wrist.rawValue])

        // Heart Rate Control Point: 0x01 resets Energy Expended; anything else is refused with
        // 0x80, Control Point Not Supported (Heart Rate Service 1.0, 3.3.1).
        try await hrm.answerWrites(to: Self.controlPoint) { $0 == [0x01] ? nil : ATTErrorCode(0x80) }
        do { try await peripheral.write([0x02], to: Self.controlPoint) } catch { #expect(error.attErrorCode == ATTErrorCode(0x80)) }
        try await peripheral.write([0x01], to: Self.controlPoint)
        #expect(try await hrm.writes(to: Self.controlPoint) == [[0x01]])
        await central.close()
    }

    /// Notifications and indications reach the subscriber; scripting a peripheral that was
    /// never added, or a characteristic it lacks, is a typed error.
    @Test(.timeLimit(.minutes(1)))
    func notificationsAndScriptingErrors() async throws {
        let (fake, central) = try await Self.rig()
        let battery = Self.batteryPeripheral()
        await #expect(throws: FakeError.notAdded("Battery sim")) { try await battery.simulateNotification(BatteryLevel(percent: 1), for: Self.level) }
        fake.add(battery)
        await #expect(throws: FakeError.noCharacteristic(BluetoothUUID(uuid16: 0x2A37))) { try await battery.setValue([0], for: Self.measurement) }
        #expect(throws: FakeError.notConnected(battery.address)) { try fake.simulateDisconnect(battery) }

        let peripheral = try await central.connect(battery.identifier)
        let levels = try await peripheral.subscribe(to: Self.level)
        try await battery.waitForSubscriber(to: Self.level)
        #expect(try await battery.simulateNotification(BatteryLevel(percent: 55), for: Self.level) == 1)
        let first = try await bounded { () -> [UInt8]? in
            for try await value in levels { return value }
            return nil
        }
        #expect(first == [55])
        try await peripheral.disconnect()
        #expect(!fake.isConnected(battery))
        await central.close()
    }

    /// `stateEvents()` gives the current state, then one value per change; `snapshot` adds
    /// whether the controller is scanning (it is while a scan has a subscriber).
    @Test(.timeLimit(.minutes(1)))
    func stateStreamAndSnapshot() async throws {
        let (fake, central) = try await Self.rig()
        let states = await central.stateEvents()
        let story = Task { () throws -> [AdapterState] in
            var story: [AdapterState] = []
            for await s in states {
                story.append(s)
                if s == .poweredOff { break }
            }
            return story
        }
        #expect(await central.snapshot.isScanning == false)
        fake.add(Self.batteryPeripheral())
        let scanningWhileSubscribed = try await bounded { () throws -> Bool in
            for try await _ in await central.scan() {
                // The first report may be handled before the scan's enable completes.
                await central.withScanner { await $0.settled() }
                return await central.snapshot.isScanning
            }
            return false
        }
        #expect(scanningWhileSubscribed)
        fake.simulateStateChange(.poweredOff)
        #expect(try await value(of: story) == [.poweredOn, .poweredOff])
        let off = await central.snapshot
        #expect(!off.isPowered && off.isAuthorized)
        await central.close()
    }
}
