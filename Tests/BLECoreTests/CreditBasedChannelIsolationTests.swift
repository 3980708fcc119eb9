import Testing
import BLECore
import BLETestSupport
import BLEWire

/// A malformed K-frame closes its own channel only: a second channel already open on the same
/// link keeps flowing both ways (Core Spec 5.4 Vol 3, Part A, 3.4.3 and 4.6). Virtual time.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedChannelIsolationTests {
    @Test func malformedKFrameOnOneChannelLeavesTheOtherOpenChannelFlowing() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // First channel: our CID 0x0040, the peer's 0x0050.
        let (broken, _) = try await CreditBasedChannelTests.open(vc, connection)
        // Second channel: our CID 0x0041, the peer's 0x0051, MPS 23, 3 credits.
        let opening = Task { try await connection.openL2CAPChannel(psm: 0x0080) }
        let request = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 2)
        let command = try L2CAPSignalingCommand(bytes: request.payload)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: command.identifier, body: .leCreditBasedConnectionResponse(
            destinationCID: 0x0051, mtu: 256, mps: 23, initialCredits: 3, result: 0)))
        let healthy = try await opening.value
        #expect(healthy.localCID == 0x0041)

        // On 0x0040: SDU Length 2 with three data octets.
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x02, 0x00, 1, 2, 3])
        await #expect(throws: L2CAPChannelError.malformedKFrame(peer: "\(VC.peer.address)", cid: 0x0040, .sduOverrun(sduLength: 2, received: 3))) {
            try await broken.receive()
        }
        // 4.6 Disconnection Request (identifier 3, after the two connection requests) for that
        // channel only: DCID 0x0050, SCID 0x0040.
        let disconnect = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 3)
        #expect(disconnect.payload == [0x06, 0x03, 0x04, 0x00, 0x50, 0x00, 0x40, 0x00])

        // The other channel receives an SDU in two K-frames (SDU Length 5, "hello") ...
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0041, payload: [0x05, 0x00, 0x68, 0x65, 0x6C])
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0041, payload: [0x6C, 0x6F])
        #expect(try await healthy.receive() == Array("hello".utf8))
        // ... and sends one: K-frame with SDU Length 3 on the peer's CID 0x0051.
        try await healthy.send([0x01, 0x02, 0x03])
        let frame = try await vc.waitForL2CAP(channelID: 0x0051)
        #expect(frame.payload == [0x03, 0x00, 0x01, 0x02, 0x03])
        #expect(await connection.isConnected)
        // Nothing else was closed: one Disconnection Request in all.
        #expect(vc.signalingReceived.filter { $0.code == 0x06 }.count == 1)
    }
}
