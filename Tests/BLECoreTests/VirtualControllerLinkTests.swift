import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Link behaviour through the virtual controller: disconnects and reconnection, ACL
/// fragmentation and credits, and the host's answers on the LE signaling and SMP channels.
@Suite(.timeLimit(.minutes(1)))
struct VirtualControllerLinkTests {
    @Test func peerDisconnectIsReported() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        var events = await connection.events().makeAsyncIterator()
        try vc.disconnect(VC.peer, reason: .remoteUserTerminatedConnection)
        #expect(await events.nextLifecycle() == .disconnected(reason: .remoteUserTerminatedConnection, willReconnect: false))
        #expect(await !connection.isConnected)
    }

    @Test func reconnectPolicyRestoresTheLink() async throws {
        let (vc, central) = try await VC.stack()
        let policy = ReconnectPolicy.always(maxAttempts: 3, backoff: .exponential(initial: .seconds(1), jitter: 0))
        let connection = try await central.connect(VC.peer, reconnect: policy)
        var events = await connection.events().makeAsyncIterator()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: .seconds(1)))
        await vc.advance(by: .seconds(1))
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        #expect(await events.nextLifecycle() == .connected(handle: 0x0041, parameters: ConnectionParameters(interval: .milliseconds(30), peripheralLatency: 0, supervisionTimeout: .seconds(5))))
        #expect(vc.commandsReceived.filter { $0.opcode == .leCreateConnection }.count == 2)
    }

    @Test func hundredBytePDUIsFragmentedTo27ByteBuffers() async throws {
        let server = EchoATTServer()
        let (vc, central) = try await VC.stack({ o in o.aclPacketLength = 27; o.aclPacketCount = 8 }, server: server)
        let connection = try await central.connect(VC.peer)
        let handle = try #require(await connection.handle)
        // ATT Write Command (0x52) to handle 0x0003 with 97 value octets: a 100-byte ATT PDU.
        let pdu: [UInt8] = [0x52, 0x03, 0x00] + (0..<97).map { UInt8($0) }
        try await connection.attChannel().send(pdu)
        try await vc.waitForL2CAP(channelID: L2CAPChannelID.att)
        let fragments = vc.aclReceived.filter { $0.handle == handle }
        // L2CAP basic header (length 100 = 0x64, CID 0x0004) + 100 octets = 104 -> 27 + 27 + 27 + 23.
        #expect(fragments.map(\.data.count) == [27, 27, 27, 23])
        #expect(fragments.map(\.boundary) == [.firstNonFlushable, .continuing, .continuing, .continuing])
        #expect(Array(fragments[0].data.prefix(7)) == [0x64, 0x00, 0x04, 0x00, 0x52, 0x03, 0x00])
        #expect(server.pdus == [pdu])
        #expect(vc.aclFlowControlViolations == 0)
    }

    @Test func serverResponseIsFragmentedAndReassembledByTheHost() async throws {
        let (vc, central) = try await VC.stack { o in o.controllerToHostFragmentSize = 10 }
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        await channel.executor.hop { channel.setHandlers(receive: { continuation.yield($0) }, close: { _ in continuation.finish() }) }
        // Read Request (0x0A) for handle 0x0007: the echo server answers 0x0B + 40 x 0x07.
        try await channel.send([0x0A, 0x07, 0x00])
        var received = stream.makeAsyncIterator()
        #expect(await received.next() == [0x0B] + Array(repeating: 0x07, count: 40))
        #expect(vc.l2capSent.map(\.payload) == [[0x0B] + Array(repeating: 0x07, count: 40)])
    }

    @Test func secondPDUWaitsForNumberOfCompletedPackets() async throws {
        let server = EchoATTServer()
        let (vc, central) = try await VC.stack({ o in o.aclPacketCount = 1; o.packetCompletion = .manual }, server: server)
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        try await channel.send([0x52, 0x03, 0x00, 0x01]) // handed to the one controller buffer
        let second = vc.task { try await channel.send([0x52, 0x03, 0x00, 0x02]) }
        await vc.settle()
        #expect(vc.aclReceived.count == 1)
        vc.completePackets()
        try await second.value
        try await vc.waitForL2CAP(channelID: L2CAPChannelID.att, count: 2)
        #expect(server.pdus == [[0x52, 0x03, 0x00, 0x01], [0x52, 0x03, 0x00, 0x02]])
        #expect(vc.aclFlowControlViolations == 0)
    }

    @Test func droppedLinkFailsQueuedSends() async throws {
        let (vc, central) = try await VC.stack { o in o.aclPacketCount = 1; o.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        let channel = try await connection.attChannel()
        try await channel.send([0x52, 0x03, 0x00, 0x01])
        let queued = vc.task { try await channel.send([0x52, 0x03, 0x00, 0x02]) }
        await vc.settle()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        await #expect(throws: LinkError.disconnected(peer: VC.peer.address, reason: .connectionTimeout)) { try await queued.value }
        #expect(vc.aclReceived.count == 1)
    }

    @Test func parameterUpdateRequestAccepted() async throws {
        let (vc, central) = try await VC.stack()
        _ = try await central.connect(VC.peer)
        let range = ConnectionParameterRange(minimumInterval: 0x0030, maximumInterval: 0x0040, peripheralLatency: 2, supervisionTimeout: 0x0258)
        #expect(range.intervals.minimum == .milliseconds(60) && range.intervals.maximum == .milliseconds(80) && range.timeout == .seconds(6))
        try vc.requestParameterUpdate(from: VC.peer, range, identifier: 7)
        let response = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        // Connection Parameter Update Response (Vol 3, Part A, 4.21): code 0x13, identifier 7,
        // length 2, result 0x0000 accepted.
        #expect(response.payload == [0x13, 0x07, 0x02, 0x00, 0x00, 0x00])
        let update = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2013))
        let decoded = try HCICommand.LEConnectionUpdate(parameters: update.parameters)
        #expect(decoded.parameters.intervalMin == 0x0030 && decoded.parameters.intervalMax == 0x0040)
        #expect(decoded.parameters.maxLatency == 2 && decoded.parameters.supervisionTimeout == 0x0258)
    }

    @Test func parameterUpdateRequestRejectedByPolicy() async throws {
        let (vc, central) = try await VC.stack(central: { o in o.parameterUpdatePolicy = { _, range in range.intervals.maximum <= .milliseconds(40) } })
        _ = try await central.connect(VC.peer)
        let range = ConnectionParameterRange(minimumInterval: 0x0030, maximumInterval: 0x0040, peripheralLatency: 0, supervisionTimeout: 0x0258)
        try vc.requestParameterUpdate(from: VC.peer, range, identifier: 9)
        let response = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        // Result 0x0001: Connection Parameters rejected.
        #expect(response.payload == [0x13, 0x09, 0x02, 0x00, 0x01, 0x00])
        await vc.settle()
        #expect(!vc.commandsReceived.contains { $0.opcode.rawValue == 0x2013 })
    }

    @Test func pairingRequestAnsweredPairingNotSupported() async throws {
        let (vc, central) = try await VC.stack()
        _ = try await central.connect(VC.peer)
        // Pairing Request (Vol 3, Part H, 3.5.1): code 0x01, IO NoInputNoOutput, no OOB,
        // AuthReq bonding, max key 16, key distribution 0x07 / 0x07.
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.securityManager, payload: [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
        let answer = try await vc.waitForL2CAP(channelID: L2CAPChannelID.securityManager)
        // Pairing Failed (3.5.5): code 0x05, reason 0x05 Pairing Not Supported.
        #expect(answer.payload == [0x05, 0x05])
    }
}
