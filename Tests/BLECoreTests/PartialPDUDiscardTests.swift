import Synchronization
import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import BLEWire

/// A peer (or a transport) that breaks off its PDUs: every partial PDU the host throws away is
/// counted (`HCIHost.discardedPartialInboundPDUs`, part of `droppedInboundPDUs`) and logged at
/// most once per interval, like the other drops. Virtual time; ACL packets with
/// Packet_Boundary_Flag 0b00 (start) or 0b01 (continuation) (Vol 4, Part E, 5.4.2) carrying
/// L2CAP basic-mode PDUs (Vol 3, Part A, 3.1) on the ATT channel, Handle Value Notifications
/// (Vol 3, Part F, 3.4.7.1: 0x1B, handle 0x0003, value).
@Suite(.timeLimit(.minutes(1)))
struct PartialPDUDiscardTests {
    /// The first 7 of the 12 bytes of a notification with a 5-octet value: L2CAP length 8, CID 0x0004.
    static let partial: [UInt8] = [0x08, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00]
    /// A whole notification of value 0x2A in one start fragment: L2CAP length 4, CID 0x0004.
    static let whole: [UInt8] = [0x04, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00, 0x2A]

    @Test func everyPartialPDUThrownAwayIsCountedAndLogged() async throws {
        let log = HostileLinkTests.LogLines()
        let (vc, central) = try await VC.stack(central: { $0.logger = log.logger })
        let connection = try await central.connect(VC.peer)
        let host = central.host
        let h = try #require(vc.handle(of: VC.peer))
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        await channel.executor.hop { channel.setHandlers(receive: { continuation.yield($0) }, close: { _ in continuation.finish() }) }
        var received = stream.makeAsyncIterator()
        func send(_ boundary: ACLPacketBoundary, _ data: [UInt8]) { vc.inject(.acl(ACLDataPacket(handle: h, boundary: boundary, data: data))) }

        // A start fragment before the PDU in progress completed: the partial PDU is discarded,
        // counted and logged; the new fragment, a whole notification, is still delivered.
        send(.firstNonFlushable, Self.partial)
        send(.firstNonFlushable, Self.whole)
        #expect(await received.next() == [0x1B, 0x03, 0x00, 0x2A])
        #expect(await host.discardedPartialInboundPDUs == 1)
        #expect(await host.droppedInboundPDUs == 1)
        #expect(log.matching("handle \(h.hex) (\(VC.peer.address)): start fragment while 7 of 12 bytes were pending: partial PDU discarded").count == 1)

        // A continuation with no PDU in progress: a dropped fragment, not a partial PDU.
        await vc.advance(by: .seconds(10))
        send(.continuing, [0x01, 0x02])
        await vc.settle()
        #expect(await host.discardedPartialInboundPDUs == 1)
        #expect(await host.droppedInboundPDUs == 2)
        #expect(log.matching("continuation fragment (2 bytes) with no PDU in progress").count == 1)

        // A continuation that overruns the L2CAP length (7 + 6 bytes of 12): discarded.
        await vc.advance(by: .seconds(10))
        send(.firstNonFlushable, Self.partial)
        send(.continuing, [1, 2, 3, 4, 5, 6])
        await vc.settle()
        #expect(await host.discardedPartialInboundPDUs == 2)
        #expect(await host.droppedInboundPDUs == 3)
        #expect(log.matching("continuation overruns the L2CAP length by 1 bytes: PDU discarded").count == 1)

        // A flood of broken-off PDUs: each is counted, one line per 10 s says how many were not written.
        await vc.advance(by: .seconds(10))
        for _ in 0..<100 { send(.firstNonFlushable, Self.partial) }
        send(.firstNonFlushable, Self.whole)
        #expect(await received.next() == [0x1B, 0x03, 0x00, 0x2A])
        #expect(await host.discardedPartialInboundPDUs == 102)
        await vc.advance(by: .seconds(10))
        send(.firstNonFlushable, Self.partial)
        send(.firstNonFlushable, Self.whole)
        #expect(await received.next() == [0x1B, 0x03, 0x00, 0x2A])
        #expect(await host.discardedPartialInboundPDUs == 103)
        let lines = log.matching("start fragment while 7 of 12 bytes were pending")
        #expect(lines.count == 3)
        #expect(lines.last?.contains("(99 similar lines suppressed") == true)

        // The link closes mid-PDU: the partial PDU is counted and logged too.
        await vc.advance(by: .seconds(10))
        send(.firstNonFlushable, Self.partial)
        await vc.settle()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        await vc.settle()
        #expect(await host.discardedPartialInboundPDUs == 104)
        #expect(await host.droppedInboundPDUs == 105)
        #expect(log.matching("link closed while 7 of 12 bytes were pending: partial PDU discarded").count == 1)
    }
}
