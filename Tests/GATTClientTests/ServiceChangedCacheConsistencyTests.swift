import Testing
import ATT
@testable import BLETestSupport
@testable import GATTClient
import BLEWire

/// What a client knows of a peer's database stays consistent when Service Changed (Vol 3,
/// Part G, 7.1) lands during discovery: nothing is kept under a service no longer known, and
/// a re-discovered service never overlaps a kept one (found by the ServiceChanged fuzz target).
@Suite(.timeLimit(.minutes(1)))
struct ServiceChangedCacheConsistencyTests {
    static let a = BluetoothUUID(uuid16: 0x1800), b = BluetoothUUID(uuid16: 0x180D), c = BluetoothUUID(uuid16: 0x180F)

    @Test func aRediscoveredServiceEndingPastTheStaleRangeReplacesWhatItOverlaps() {
        var db = GATTDatabaseSnapshot()
        db.services = [GATTService(uuid: Self.a, handle: 0x0001, endHandle: 0x0005),
                       GATTService(uuid: Self.b, handle: 0x0006, endHandle: 0x0009),
                       GATTService(uuid: Self.c, handle: 0x000A, endHandle: 0x000F)]
        let measurement = GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0x2A37), handle: 0x0007, valueHandle: 0x0008,
                                             properties: [.notify], endHandle: 0x0009, serviceUUID: Self.b)
        db.characteristics[0x0006] = [measurement]
        db.descriptors[0x0008] = [GATTDescriptor(uuid: BluetoothUUID(uuid16: 0x2902), handle: 0x0009)]
        db.invalidate(ATTHandleRange(start: 0x0001, end: 0x0005))
        #expect(db.staleRanges == [ATTHandleRange(start: 0x0001, end: 0x0005)])
        // The peer now has one service over 0x0001-0x0007: it covers part of 0x0006-0x0009.
        db.merge([GATTService(uuid: Self.a, handle: 0x0001, endHandle: 0x0007)], rediscovered: ATTHandleRange(start: 0x0001, end: 0x0005))
        #expect(db.services == [GATTService(uuid: Self.a, handle: 0x0001, endHandle: 0x0007),
                                GATTService(uuid: Self.c, handle: 0x000A, endHandle: 0x000F)])
        #expect(db.characteristics[0x0006] == nil)
        #expect(db.descriptors[0x0008] == nil)
        #expect(db.staleRanges.isEmpty)
    }

    @Test func characteristicsOfAServiceInvalidatedMeanwhileAreReturnedButNotKept() async throws {
        let bed = TestBed()
        let peripheral = bed.peripheral
        _ = try await peripheral.services()      // also enables Service Changed indications
        let lab = try await peripheral.resolve(Lab.service)
        #expect(await bed.server.sendServiceChanged(range: lab.range) == 1)
        #expect(await peripheral.snapshot.staleRanges == [lab.range])
        // `lab` is the service as discovered before the indication: what is found under it
        // is what the peer says, but it is not kept under a service the client no longer knows.
        let found = try await peripheral.characteristics(of: lab)
        #expect(found.map(\.uuid).contains(Lab.pattern.uuid))
        #expect(await peripheral.snapshot.characteristics[lab.handle] == nil)
        // The next use re-discovers the service and keeps what it finds.
        #expect(try await peripheral.characteristics(of: Lab.service) == found)
        #expect(await peripheral.snapshot.characteristics[lab.handle] == found)
    }

    /// Two discoveries of one service's characteristics at once, the server answering each
    /// differently: the later result replaces the earlier, and the descriptors found meanwhile
    /// under a characteristic it no longer lists go with it (ServiceChanged fuzz target:
    /// Fuzz/corpus/ServiceChanged/concurrent-rediscovery-orphan-descriptors).
    @Test func descriptorsGoWithTheCharacteristicsALaterDiscoveryNoLongerLists() async throws {
        let bed = TestBed()
        let peripheral = bed.peripheral
        let lab = try await peripheral.resolve(Lab.service)
        let found = try await peripheral.characteristics(of: lab)
        let pattern = try #require(found.first { $0.uuid == Lab.pattern.uuid })
        _ = try await peripheral.descriptors(of: pattern)
        #expect(await peripheral.snapshot.descriptors[pattern.valueHandle] != nil)
        // The later discovery's result, without that characteristic.
        let others = found.filter { $0 != pattern }
        await peripheral.keep(others, of: lab)
        #expect(await peripheral.snapshot.characteristics[lab.handle] == others)
        #expect(await peripheral.snapshot.descriptors[pattern.valueHandle] == nil)
    }
}
