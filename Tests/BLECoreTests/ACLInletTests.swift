import Testing
import BLECore
import BLETestSupport

/// Whole ATT PDUs take the host's fast path from the transport callback to the link's ATT
/// channel; fragmented ones are reassembled by the host. Both reach the channel in order, as
/// views whose indices skip the 4-byte L2CAP basic header (Vol 3, Part A, 3.1).
@Suite(.timeLimit(.minutes(1)))
struct ACLInletTests {
    @Test func wholeAndFragmentedPDUsArriveInOrderAsViews() async throws {
        // Controller-to-host ACL packets carry at most 10 bytes: the 45-byte L2CAP PDU of the
        // Read Response is cut into 5 fragments, the 7-byte one of the MTU response is whole.
        let (_, central) = try await VC.stack { o in o.controllerToHostFragmentSize = 10 }
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: (bytes: [UInt8], start: Int).self)
        channel.setSliceHandlers(receive: { continuation.yield((Array($0), $0.startIndex)) }, close: { _ in continuation.finish() })
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
        channel.setSliceHandlers(receive: { continuation.yield(Array($0)) }, close: { _ in continuation.finish() })
        try vc.disconnect(VC.peer, reason: .remoteUserTerminatedConnection)
        // The channel closes with the link and nothing was delivered on it.
        var received = stream.makeAsyncIterator()
        #expect(await received.next() == nil)
        await central.close()
    }
}
