import Testing
import Synchronization
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// Every ACL packet goes from the transport callback into the host's inlet, which reassembles
/// it on its link and hands each complete PDU for a registered fixed channel to that
/// channel: one route, whole or fragmented. PDUs reach the channel in order, as views whose
/// indices skip the 4-byte L2CAP basic header (Vol 3, Part A, 3.1).
@Suite(.timeLimit(.minutes(1)))
struct ACLInletTests {
    @Test func wholeAndFragmentedPDUsArriveInOrderAsViews() async throws {
        // Controller-to-host ACL packets carry at most 10 bytes: the 45-byte L2CAP PDU of the
        // Read Response is cut into 5 fragments, the 7-byte one of the MTU response is whole.
        let (_, central) = try await VC.stack { o in o.controllerToHostFragmentSize = 10 }
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: (bytes: [UInt8], start: Int).self)
        await channel.executor.hop { channel.setSliceHandlers(receive: { continuation.yield((Array($0), $0.startIndex)) }, close: { _ in continuation.finish() }) }
        // Read Request (3.4.4.3) for handle 0x0007: the echo server answers a Read Response
        // (0x0B) of 40 x 0x07. Exchange MTU Request (3.4.2.1) with Client Rx MTU 0x0017: it
        // answers Exchange MTU Response (0x03) with Server Rx MTU 0x00F7.
        try await channel.send([0x0A, 0x07, 0x00])
        try await channel.send([0x02, 0x17, 0x00])
        var received = stream.makeAsyncIterator()
        let read = await received.next()
        #expect(read?.bytes == [0x0B] + Array(repeating: 0x07, count: 40))
        #expect(read?.start == 4)
        let mtu = await received.next()
        #expect(mtu?.bytes == [0x03, 0xF7, 0x00])
        #expect(mtu?.start == 4)
        await central.close()
    }

    @Test func disconnectClosesTheSliceHandlersChannel() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        await channel.executor.hop { channel.setSliceHandlers(receive: { continuation.yield(Array($0)) }, close: { _ in continuation.finish() }) }
        try vc.disconnect(VC.peer, reason: .remoteUserTerminatedConnection)
        // The channel closes with the link and nothing was delivered on it.
        var received = stream.makeAsyncIterator()
        #expect(await received.next() == nil)
        await central.close()
    }

    /// The inlet alone (no host call) reassembles fragments (Vol 4, Part E, 5.4.2: a start
    /// fragment 0b10, then continuations 0b01) into the link's ATT channel and into any other
    /// registered fixed channel (SMP 0x0006 here), and leaves LE signaling to the host.
    @Test func theInletReassemblesFragmentsIntoEveryFixedChannel() async throws {
        let (_, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let handle = try #require(await connection.handle)
        let host = central.host
        let att = try await connection.attChannel()
        let smp = try #require(await host.fixedChannel(handle: handle, channelID: L2CAPChannelID.securityManager))
        let received = Mutex<[(UInt16, [UInt8])]>([])
        await att.executor.hop { att.setSliceHandlers(receive: { sdu in received.withLock { $0.append((0x0004, Array(sdu))) } }, close: { _ in }) }
        await smp.executor.hop { smp.setSliceHandlers(receive: { sdu in received.withLock { $0.append((0x0006, Array(sdu))) } }, close: { _ in }) }

        func fragments(_ pdu: [UInt8], cut: Int) -> [ACLDataPacket] {
            [ACLDataPacket(handle: handle, boundary: .firstFlushable, data: Array(pdu[..<cut])),
             ACLDataPacket(handle: handle, boundary: .continuing, data: Array(pdu[cut...]))]
        }
        // Handle Value Notification (Vol 3, Part F, 3.4.7.1) for handle 0x0007, value 01..05,
        // in an L2CAP basic frame of 8 bytes on CID 0x0004.
        let notification: [UInt8] = [0x08, 0x00, 0x04, 0x00, 0x1B, 0x07, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05]
        // Pairing Random (Vol 3, Part H, 3.5.4): code 0x04 and 16 bytes, on CID 0x0006.
        let random: [UInt8] = [0x11, 0x00, 0x06, 0x00, 0x04] + Array(UInt8(0x10)...0x1F)
        // Connection Parameter Update Response (Vol 3, Part A, 4.21): code 0x13, identifier
        // 0x01, length 2, result 0 (accepted), on CID 0x0005.
        let signaling: [UInt8] = [0x06, 0x00, 0x05, 0x00, 0x13, 0x01, 0x02, 0x00, 0x00, 0x00]

        let inlet = await host.inlet
        let packets = fragments(notification, cut: 6) + fragments(random, cut: 9) + fragments(signaling, cut: 6)
        let left: [String] = await withCheckedContinuation { c in
            host.executor.queue.async {
                var left: [String] = []
                for packet in packets {
                    switch inlet.receive(packet) {
                    case .none: left.append("none")
                    case .pdu(_, let cid, let payload): left.append("pdu \(cid.hex) \(Array(payload))")
                    default: left.append("other")
                    }
                }
                c.resume(returning: left)
            }
        }
        #expect(left == ["none", "none", "none", "none", "none", "pdu \(UInt16(0x0005).hex) \([0x13, 0x01, 0x02, 0x00, 0x00, 0x00] as [UInt8])"])
        let delivered = received.withLock { $0 }
        #expect(delivered.map(\.0) == [0x0004, 0x0006])
        #expect(delivered.first?.1 == [0x1B, 0x07, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05])
        #expect(delivered.last?.1 == [0x04] + Array(UInt8(0x10)...0x1F))
        await central.close()
    }
}
