import Testing
import GATTClient
import BLETestSupport
import BLEWire
import BLECore
import ATT
import GATTServer

@Suite struct CacheTests {
    static let peer = LEAddress("F0:F1:F2:F3:F4:F5", type: .random)!
    static let discoveryOpcodes: Set<ATTOpcode> = [.readByGroupTypeRequest, .findByTypeValueRequest, .findInformationRequest]

    @Test func secondConnectionReusesTheCacheAfterCheckingTheHash() async throws {
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"))
        let first = TestBed(cache: cache, peer: Self.peer)
        _ = try await first.peripheral.characteristics(of: Lab.service)
        let afterFirst = await first.server.receivedOpcodes().count

        let second = TestBed(cache: cache, peer: Self.peer, sharing: first)
        #expect(try await second.peripheral.read(Lab.pattern).count == 600)
        let newOpcodes = await second.server.receivedOpcodes().dropFirst(afterFirst)
        // Exchange MTU, Read By Type of Database Hash, the Service Changed CCCD write, the
        // Read and one Read Blob: no discovery.
        #expect(!newOpcodes.contains { Self.discoveryOpcodes.contains($0) })
        #expect(newOpcodes.filter { $0 == .readByTypeRequest }.count == 1)
    }

    @Test func hashMismatchRediscovers() async throws {
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"))
        let first = TestBed(cache: cache, peer: Self.peer)
        _ = try await first.peripheral.services()
        var changed = GATTDatabase.lab()
        changed.services.append(.init(uuid: BluetoothUUID("180F")!, characteristics: [.init(uuid: BluetoothUUID("2A19")!, properties: [.read], value: [50])]))
        await first.server.replaceDatabase(changed)
        let before = await first.server.receivedOpcodes().count
        let second = TestBed(cache: cache, peer: Self.peer, sharing: first)
        let battery = CharacteristicIdentifier(uuid: BluetoothUUID("2A19")!, service: ServiceIdentifier(uuid: BluetoothUUID("180F")!))
        #expect(try await second.peripheral.read(battery, as: BatteryLevel.self) == BatteryLevel(percent: 50))
        #expect(await first.server.receivedOpcodes().dropFirst(before).contains(.readByGroupTypeRequest))
    }

    @Test func serviceChangedInvalidatesTheRange() async throws {
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"))
        let bed = TestBed(cache: cache, peer: Self.peer)
        #expect(try await bed.peripheral.services().count == 3)
        #expect(await bed.server.clientConfigurations(of: BluetoothUUID("2A05")!) == [0x0002])
        var changed = GATTDatabase.lab()
        changed.services.append(.init(uuid: BluetoothUUID("180F")!, characteristics: [.init(uuid: BluetoothUUID("2A19")!, properties: [.read], value: [50])]))
        await bed.server.replaceDatabase(changed)
        #expect(await bed.server.sendServiceChanged(range: ATTHandleRange(start: 30, end: 0xFFFF)) == 1)
        #expect(await bed.peripheral.snapshot.staleRanges == [ATTHandleRange(start: 30, end: 0xFFFF)])
        let before = await bed.server.receivedOpcodes().count
        let services = try await bed.peripheral.services()
        #expect(services.map(\.uuid.description).suffix(2) == ["6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "180F"])
        #expect(services.last == GATTService(uuid: BluetoothUUID("180F")!, handle: 30, endHandle: 32))
        // Only the invalidated range was discovered again: one answer from 0x001E, then
        // Attribute Not Found from 0x0021.
        #expect(await bed.server.receivedOpcodes().dropFirst(before).filter { $0 == .readByGroupTypeRequest }.count == 2)
        #expect(await cache.snapshot(for: Self.peer)?.services?.count == 4)
    }

    @Test func serviceChangedEndsStreamsInTheRange() async throws {
        let bed = TestBed()
        _ = try await bed.peripheral.services()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        #expect(await bed.server.sendServiceChanged(range: ATTHandleRange(start: 12, end: 0xFFFF)) == 1)
        var it = stream.makeAsyncIterator()
        do {
            _ = try await it.next()
            Issue.record("the stream should end")
        } catch let error as GATTError {
            #expect(error == .serviceChanged(range: ATTHandleRange(start: 12, end: 0xFFFF), peer: BluetoothAddress("F0:F1:F2:F3:F4:F5")!))
        }
        // Subscribing again re-discovers and works.
        let again = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        await bed.server.notify(characteristic: Lab.uuid(6), value: [9, 0, 0, 0])
        var it2 = again.makeAsyncIterator()
        #expect(try await it2.next() == [9, 0, 0, 0])
    }
}
