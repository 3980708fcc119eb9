import Testing
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire

/// A server that ignores ATT_MTU (Vol 3, Part F, 3.2.8: no PDU may be longer), seen through a
/// `Peripheral` at ATT_MTU 23: typed errors, nothing oversized delivered, the link usable.
@Suite(.timeLimit(.minutes(1)))
struct OversizedPDUPeripheralTests {
    static func bed() throws -> (TestBed, FaultInjectingATTServer) {
        let holder = FaultsHolder()
        let bed = TestBed(clientMTU: 23, wrap: { server in
            let hostile = FaultInjectingATTServer(wrapping: server, queue: server.queue)
            holder.server = hostile
            return hostile
        })
        return (bed, try #require(holder.server))
    }

    @Test func anOversizedReadResponseFailsTheReadWithATypedError() async throws {
        let (bed, hostile) = try Self.bed()
        let peripheral = bed.peripheral
        let pattern = try await peripheral.resolve(Lab.pattern)
        hostile.padResponses(to: 600)
        await expectMalformedRead(peripheral, Lab.pattern, valueHandle: pattern.valueHandle, peer: BluetoothAddress("F0:F1:F2:F3:F4:F5"),
                                  detail: "Read Request was answered with a Read Response of 600 octets, longer than the ATT_MTU of 23")
        #expect(await peripheral.bearer.oversizedPDUCount == 1)
        hostile.padResponses(to: nil)
        #expect(try await peripheral.read(Lab.pattern) == (0..<600).map { UInt8(truncatingIfNeeded: $0) })
    }

    @Test func anOversizedNotificationNeverReachesTheStream() async throws {
        let (bed, hostile) = try Self.bed()
        let peripheral = bed.peripheral
        let stream = try await peripheral.subscribe(to: Lab.notifyCounter)
        let handle = try #require(await bed.server.valueHandle(of: Lab.notifyCounter.uuid))
        // Handle Value Notification (0x1B) of 600 octets, then a valid one of 7.
        hostile.sendToCentrals([0x1B, UInt8(handle & 0xFF), UInt8(handle >> 8)] + [UInt8](repeating: 0xEE, count: 597))
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [1, 0, 0, 0]) == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [1, 0, 0, 0])
        #expect(await peripheral.bearer.oversizedPDUCount == 1)
    }

    @Test func anOversizedNotificationOverTheVirtualControllerNeverReachesTheStream() async throws {
        // ATT_MTU 23 on a real link of the in-process controller: the 600-octet notification
        // arrives in several ACL packets; the host's reassembly refuses it at the first (the
        // ATT channel accepts at most the bearer's ATT_MTU, 23) and tells the bearer, which
        // counts it; nothing of it is buffered or delivered.
        let bed = try await LabBed(.init(clientMTU: 23))
        let peripheral = bed.peripheral
        let stream = try await peripheral.subscribe(to: Lab.notifyCounter)
        let handle = try #require(await bed.server.valueHandle(of: Lab.notifyCounter.uuid))
        let server = bed.server
        let pdu = [0x1B, UInt8(handle & 0xFF), UInt8(handle >> 8)] + [UInt8](repeating: 0xEE, count: 597)
        await server.onQueue { for state in server.links.values { state.link.sendToCentral(pdu) } }
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [2, 0, 0, 0]) == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [2, 0, 0, 0])
        #expect(await peripheral.bearer.oversizedPDUCount == 1)
        #expect(await bed.central.host.oversizedInboundPDUs == 1)
        #expect(await peripheral.mtu == 23)
    }
}
