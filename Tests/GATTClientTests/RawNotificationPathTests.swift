import Dispatch
import Testing
import ATT
import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient

/// Notifications over a byte-reading transport: the in-process virtual controller behind a
/// unix socket pair, so the host frames real H4 bytes as from a UART or TCP controller. A
/// notification that arrives whole in one ACL packet goes from the read buffer to the
/// subscriber's copy without a packet value (the transport's raw ACL receiver); anything
/// else (fragments, responses, indications) takes the packet path. Both must interleave in
/// the order the controller sent them.
@Suite(.timeLimit(.minutes(1)))
struct RawNotificationPathTests {
    /// The lab bed in immediate time over a unix socket pair, counting the raw path's packets.
    static func bed() async throws -> (LabBed, RawACLCountingTransport) {
        var controller = VirtualController.Options()
        controller.time = .immediate
        // Controller-to-host ACL payloads of at most 27 bytes: a notification value
        // longer than 20 bytes (27 - 4 L2CAP - 3 ATT) arrives in two fragments.
        controller.controllerToHostFragmentSize = 27
        let bed = try await LabBed(.init(controller: controller, transport: { RawACLCountingTransport(try $0.makeSocketTransport()) },
                                         requestDataLengthExtension: false, request2MPHY: false))
        return (bed, try #require(bed.transport as? RawACLCountingTransport))
    }

    @Test func wholeAndFragmentedNotificationsArriveInOrderAndOnlyWholeOnesSkipThePacketPath() async throws {
        let (bed, transport) = try await Self.bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let takenBefore = transport.taken
        // 1...4 whole, 5 in two fragments (24 bytes), 6...8 whole, 9 fragmented, 10 whole.
        var sent: [[UInt8]] = []
        for i in 1...10 {
            let value: [UInt8] = i == 5 || i == 9 ? [UInt8](repeating: UInt8(i), count: 24) : [UInt8(i), 0, 0, 0]
            #expect(await bed.server.notify(characteristic: Lab.uuid(6), value: value) == 1)
            sent.append(value)
        }
        var got: [[UInt8]] = []
        for try await v in stream {
            got.append(v)
            if got.count == sent.count { break }
        }
        #expect(got == sent)
        // The count is taken after the receiver returns, and the subscriber may already have
        // the last value by then: a round trip through the adapter queue waits for it.
        _ = try await bed.peripheral.read(Lab.pattern)
        // The eight whole notifications were taken from the read buffer; the two fragmented
        // ones (four ACL packets) went the packet way.
        #expect(transport.taken - takenBefore == 8)
    }

    @Test func responsesAndIndicationsBetweenNotificationsKeepTheirOrder() async throws {
        let (bed, _) = try await Self.bed()
        let notifications = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let indications = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true)
        await bed.server.notify(characteristic: Lab.uuid(6), value: [1, 0, 0, 0])
        // A Read Response and its request between two notifications.
        let read = try await bed.peripheral.read(Lab.notifyCounter)
        #expect(read == [1, 0, 0, 0])
        #expect(await bed.server.indicate(characteristic: Lab.uuid(4), value: [7]) == 1)
        await bed.server.notify(characteristic: Lab.uuid(6), value: [2, 0, 0, 0])
        var n = notifications.makeAsyncIterator()
        #expect(try await n.next() == [1, 0, 0, 0])
        #expect(try await n.next() == [2, 0, 0, 0])
        var i = indications.makeAsyncIterator()
        #expect(try await i.next() == [7])
        #expect(await bed.server.receivedOpcodes().last == .handleValueConfirmation)
    }
}
