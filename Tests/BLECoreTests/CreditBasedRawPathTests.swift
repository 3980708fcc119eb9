import Testing
import BLECore
import BLETestSupport

/// K-frames over a byte-reading transport: the virtual controller behind a unix socket pair,
/// so the host frames real H4 bytes as from a UART or TCP controller. A K-frame that arrives
/// as one whole L2CAP PDU in one ACL packet goes from the read buffer to its channel without
/// a packet value (the transport's raw ACL receiver); a fragmented one takes the packet path.
/// SDUs must come out whole and in order either way (Vol 3, Part A, 3.4 and 7.2).
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedRawPathTests {
    @Test func wholeKFramesSkipThePacketPathAndSDUsKeepTheirOrder() async throws {
        // Controller-to-host ACL payloads of at most 27 bytes: an L2CAP PDU of more (a
        // K-frame payload of more than 23 bytes) arrives in two fragments.
        let vc = VirtualController(options: .init())
        vc.addPeripheral(SimulatedPeripheral(address: VC.peer, advertisingData: [0x02, 0x01, 0x06], attServer: EchoATTServer()))
        let transport = RawACLCountingTransport(try vc.makeSocketTransport())
        let central = Central(transport: transport, options: vc.centralOptions())
        try await central.powerOn()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, mtu: 512, mps: 100, credits: 10)
        let before = transport.taken

        let whole: [UInt8] = [1, 2, 3]
        let fragmented = [UInt8](repeating: 0x44, count: 40)
        let split = (0..<30).map { UInt8($0) }
        let last: [UInt8] = [0xEE]
        // SDU Length first (Vol 3, Part A, 3.4.3): whole in one K-frame; in one K-frame of 42
        // bytes (a 46-byte PDU, two ACL fragments); over two whole K-frames of 23 and 9 bytes.
        let frames: [[UInt8]] = [[0x03, 0x00] + whole, [0x28, 0x00] + fragmented,
                                 [0x1E, 0x00] + split[0..<21], Array(split[21...]), [0x01, 0x00] + last]
        for frame in frames { try vc.sendL2CAP(from: VC.peer, channelID: channel.localCID, payload: frame) }

        var received: [[UInt8]] = []
        for _ in 0..<4 { received.append(try #require(try await channel.receive(timeout: .seconds(5)))) }
        #expect(received == [whole, fragmented, split, last])
        // A hop onto the channel's executor: the count is taken after the receiver returned.
        #expect(await channel.bytesReceived == 74)
        // Four of the five K-frames were whole in one packet; the 42-byte one went the packet way.
        #expect(transport.taken - before == 4)
        #expect(await channel.framesReceived == 5)
        await central.close()
    }
}
