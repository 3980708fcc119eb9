import Testing
import GATTClient
import BLETestSupport
import BLEWire
import GATTServer

@Suite struct DiscoveryTests {
    @Test func labDiscoveryMatchesItsDescription() async throws {
        let bed = TestBed()
        let services = try await bed.peripheral.services()
        // GAP (Device Name, Appearance), GATT (Service Changed + CCCD, Database Hash), then
        // the lab service, laid out in declaration order (Vol 3, Part G, 3).
        #expect(services == [
            GATTService(uuid: BluetoothUUID("1800")!, handle: 1, endHandle: 5),
            GATTService(uuid: BluetoothUUID("1801")!, handle: 6, endHandle: 11),
            GATTService(uuid: Lab.uuid(1), handle: 12, endHandle: 29),
        ])
        let chars = try await bed.peripheral.characteristics(of: Lab.service)
        #expect(chars.map(\.uuid) == (2...6).map { Lab.uuid($0) })
        #expect(chars.map(\.properties) == [[.read], [.read, .write, .writeWithoutResponse], [.indicate], [.read], [.notify, .read]])
        #expect(chars.map(\.valueHandle) == [14, 17, 20, 24, 27])
        #expect(chars.map(\.endHandle) == [15, 18, 22, 25, 29])
        #expect(chars.allSatisfy { $0.serviceUUID == Lab.uuid(1) })

        let cccd = BluetoothUUID("2902")!, userDescription = BluetoothUUID("2901")!
        #expect(try await bed.peripheral.descriptors(of: Lab.indicateCounter).map(\.uuid) == [cccd, userDescription])
        #expect(try await bed.peripheral.descriptors(of: Lab.pattern).map(\.uuid) == [userDescription])
        let text = try await bed.peripheral.readDescriptor(DescriptorIdentifier(uuid: userDescription, characteristic: Lab.notifyCounter))
        #expect(String(decoding: text, as: UTF8.self) == "Counter (notifications)")
        // Second use comes from what was discovered: no new discovery requests.
        let before = await bed.server.receivedOpcodes().count
        _ = try await bed.peripheral.characteristics(of: Lab.service)
        #expect(await bed.server.receivedOpcodes().count == before)
    }

    @Test func heartRateMonitorPreset() async throws {
        let bed = TestBed(.heartRateMonitor())
        #expect(try await bed.peripheral.services().map(\.uuid.description) == ["1800", "1801", "180D", "180F", "180A"])
        let dis = ServiceIdentifier(uuid: BluetoothUUID("180A")!)
        #expect(try await bed.peripheral.read(CharacteristicIdentifier(uuid: "2A29", service: dis), as: String.self) == "Virtual Sensors")
        let pnp = try await bed.peripheral.read(CharacteristicIdentifier(uuid: "2A50", service: dis), as: PnPID.self)
        #expect(pnp == PnPID(vendorIDSource: 1, vendorID: 0xFFFF, productID: 0x0001, productVersion: 0x0100))
        let gap = ServiceIdentifier(uuid: BluetoothUUID("1800")!)
        let appearance = try await bed.peripheral.read(CharacteristicIdentifier(uuid: "2A01", service: gap), as: Appearance.self)
        #expect(appearance.rawValue == 833)
        #expect(appearance.name == "Heart Rate Sensor: Heart Rate Belt")
    }

    @Test func primaryServiceByUUIDAndIncludes() async throws {
        let a = BluetoothUUID("AAAA")!, b = BluetoothUUID("BBBB")!
        let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!
        let db = GATTDatabase(services: [
            .init(uuid: a, includes: [b, custom], characteristics: [.init(uuid: BluetoothUUID("2A19")!, properties: [.read], value: [1])]),
            .init(uuid: b, isPrimary: false, characteristics: []),
            .init(uuid: custom, isPrimary: false, characteristics: []),
        ], includesGATTService: false)
        let bed = TestBed(db)
        let procedures = GATTProcedures(bearer: await bed.peripheral.bearer)
        let found = try await procedures.discoverPrimaryServices(uuid: a)
        #expect(found == [GATTService(uuid: a, handle: 1, endHandle: 5)])
        let included = try await bed.peripheral.includedServices(of: ServiceIdentifier(uuid: a))
        #expect(included.map(\.service.uuid) == [b, custom])
        #expect(included.map(\.service.handle) == [6, 7])
    }

    @Test func notFoundNamesWhatThePeerHas() async throws {
        let bed = TestBed()
        let heartRate = ServiceIdentifier(uuid: "180D")
        await #expect(throws: GATTError.self) { _ = try await bed.peripheral.read(CharacteristicIdentifier(uuid: "2A37", service: heartRate)) }
        do {
            _ = try await bed.peripheral.characteristics(of: heartRate)
        } catch {
            #expect(error.description == "service 180D not found on F0:F1:F2:F3:F4:F5; it has 1800, 1801, 6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        }
        // Text (not a literal) goes through the throwing initialiser.
        let text = "18XD"
        #expect(throws: GATTError.invalidUUID("18XD")) { _ = try ServiceIdentifier(uuid: text) }
    }

    @Test func nonIncreasingDiscoveryHandlesEndTheProcedure() async throws {
        let bed = TestBed(faults: .init(repeatDiscoveryResponses: true))
        do {
            _ = try await bed.peripheral.services()
            Issue.record("discovery should fail")
        } catch {
            guard case .malformed(_, _, _, let detail) = error else { Issue.record("\(error)"); return }
            #expect(detail.contains("handles must increase"))
        }
        // MTU exchange plus exactly two Read By Group Type requests: no loop.
        let opcodes = await bed.server.receivedOpcodes()
        #expect(opcodes.filter { $0 == .readByGroupTypeRequest }.count == 2)
    }
}
