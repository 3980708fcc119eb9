import Testing
import ATT
@testable import BLETestSupport
@testable import GATTClient
import BLEWire

/// A server that sends Service Changed (Vol 3, Part G, 7.1) indications in a burst, without
/// waiting for each confirmation as Vol 3, Part F, 3.4.7.2 requires: every one is confirmed,
/// the stale ranges merge into one, and the next use re-discovers that range once.
@Suite(.timeLimit(.minutes(1)))
struct ServiceChangedFloodTests {
    @Test func aBurstOfServiceChangedIndicationsCostsOneRediscovery() async throws {
        let bed = TestBed()
        let peripheral = bed.peripheral
        let services = try await peripheral.services()      // also enables Service Changed indications
        let lab = try await peripheral.resolve(Lab.service)
        _ = try await peripheral.characteristics(of: Lab.service)
        let handle = try #require(await bed.server.valueHandle(of: GATTAttributeType.serviceChanged))
        #expect(await bed.server.clientConfigurations(of: GATTAttributeType.serviceChanged) == [0x0002])
        let confirmationsBefore = await bed.server.receivedOpcodes().filter { $0 == .handleValueConfirmation }.count

        // 500 indications with ranges inside the lab service; together they cover it.
        let count = 500
        for i in 0..<count {
            let start = lab.handle + UInt16(i % 4)
            let end = lab.endHandle - UInt16(i % 3)
            var value: [UInt8] = []
            value.appendLE(start); value.appendLE(end)
            bed.channel.serverLink.sendToCentral(ATTPDU.handleValueIndication(handle: handle, value: value).bytes)
        }
        #expect(await bed.server.waitUntil("every indication confirmed") {
            $0.log.filter { $0 == .handleValueConfirmation }.count == confirmationsBefore + count
        })
        // One stale range, the smallest covering them all: the lab service.
        let snapshot = await peripheral.snapshot
        #expect(snapshot.staleRanges == [ATTHandleRange(start: lab.handle, end: lab.endHandle)])
        #expect(snapshot.characteristics[lab.handle] == nil)

        let before = await bed.server.receivedOpcodes().count
        #expect(try await peripheral.services() == services)
        // One Read By Group Type Request over the lab service's range, not one per indication.
        #expect(await bed.server.receivedOpcodes().dropFirst(before) == [.readByGroupTypeRequest])
        #expect(await peripheral.snapshot.staleRanges.isEmpty)
        #expect(try await peripheral.read(Lab.pattern).count == 600)
    }

    @Test func aServiceChangedRangeThatIsNotOneCountsAsEveryHandle() async throws {
        let bed = TestBed()
        let peripheral = bed.peripheral
        let services = try await peripheral.services()
        let handle = try #require(await bed.server.valueHandle(of: GATTAttributeType.serviceChanged))
        let confirmationsBefore = await bed.server.receivedOpcodes().filter { $0 == .handleValueConfirmation }.count
        // Start 0x0020 after end 0x0010: not a range (Vol 3, Part G, 7.1 gives start, then end).
        bed.channel.serverLink.sendToCentral([0x1D, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x20, 0x00, 0x10, 0x00])
        #expect(await bed.server.waitUntil("the indication confirmed") {
            $0.log.filter { $0 == .handleValueConfirmation }.count == confirmationsBefore + 1
        })
        #expect(await peripheral.snapshot.staleRanges == [.all])
        #expect(try await peripheral.services() == services)
    }
}
