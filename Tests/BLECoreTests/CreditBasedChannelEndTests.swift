import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// How an LE credit-based channel ends while its K-frames are on their way: never with a
/// broken SDU the sender was not told about. K-frames that wait in the link's queue past the
/// ACL send timeout end the channel with `LinkError.sendTimeout` and the rest of its K-frames
/// leave the queue; a close sends the SDUs accepted before it, whole, then the Disconnection
/// Request (Core Spec 5.4 Vol 3, Part A, 4.6 and 10.1); a send during the close is refused.
/// The controller acknowledges only when the test says (`.manual`); timeouts run on virtual time.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedChannelEndTests {
    static let dcid = CreditBasedChannelTests.dcid
    /// 4.6 Disconnection Request, identifier 2 (the connection request took 1): DCID 0x0050, SCID 0x0040.
    static let disconnectionRequest: [UInt8] = [0x06, 0x02, 0x04, 0x00, 0x50, 0x00, 0x40, 0x00]

    @Test func kFramesPastTheSendTimeoutEndTheChannel() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        let host = central.host
        let handle = try #require(vc.handle(of: VC.peer))
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 1000, peerMPS: 23, peerCredits: 100)
        // 22 K-frames (2 + 21 bytes, then 20 of 23 and one of 19): 6 reach the controller, which
        // holds them (with the connection request) and never acknowledges; 16 wait in the queue.
        let sdu = (0..<500).map { UInt8(truncatingIfNeeded: $0) }
        try await channel.send(sdu)
        await vc.settle()
        #expect(CreditBasedSendTests.frames(vc).count == 6)
        await vc.advance(by: .seconds(10))
        // Ten seconds later, a second SDU: its K-frame's deadline is ten seconds after theirs.
        try await channel.send([0xEE])
        await vc.settle()
        #expect(await host.aclLinkStatus(handle: handle)?.queuedPDUs == 17)
        await vc.advance(by: .seconds(20))

        // At 30 s the 16 K-frames fail: the SDU is broken, so the channel ends, typed, and the
        // second SDU's K-frame leaves the queue with it (after the gap the peer would take it
        // for the start of a new SDU).
        let error = L2CAPChannelError.link(.sendTimeout(peer: VC.peer.address, handle: handle, channelID: Self.dcid, milliseconds: 30_000))
        #expect(await channel.endError == error)
        #expect(error.description.contains("found no controller buffer within 30000 ms"))
        await #expect(throws: error) { try await channel.receive() }
        await #expect(throws: error) { try await channel.send([0x01]) }
        #expect(await host.timedOutCreditBasedChannels == 1)
        #expect(await host.failedOutboundPDUs == (timedOut: 16, queueFull: 0))
        // What the queue holds now is the Disconnection Request alone.
        #expect(await host.aclLinkStatus(handle: handle)?.queuedPDUs == 1)
        vc.completePackets()
        #expect(try await CreditBasedChannelTests.waitForSignaling(vc, code: 0x06) == Self.disconnectionRequest)
        await vc.settle()
        #expect(CreditBasedSendTests.frames(vc).count == 6)
        #expect(Array(CreditBasedSendTests.frames(vc).joined()) == [0xF4, 0x01] + sdu[0..<(21 + 5 * 23)])
    }

    @Test func closeSendsTheSDUsAcceptedBeforeItThenDisconnects() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        await central.host.setACLLimits(linkQueuePDUs: 4)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 100)
        // 21 K-frames (2 + 245 bytes, then 19 of 247 and one of 62): the send returns with the SDU accepted;
        // 6 K-frames reach the controller, 4 the link's queue, 11 wait in the channel.
        let sdu = CreditBasedLinkQueueTests.sdu(0x77, size: 5000)
        try await channel.send(sdu)
        await vc.settle()
        #expect(CreditBasedSendTests.frames(vc).count == 6)
        let closing = Task { await channel.close() }
        try await channel.drainers.waitForCount("the close waiting for the accepted SDU") { $0 == 1 }
        // A send that comes during the close is refused, typed; it sends nothing.
        await #expect(throws: L2CAPChannelError.closed(peer: "\(VC.peer.address)", cid: 0x0040)) { try await channel.send([0x01]) }

        await CreditBasedLinkQueueTests.acknowledge(vc, until: 21)
        vc.completePackets()
        #expect(try await CreditBasedChannelTests.waitForSignaling(vc, code: 0x06) == Self.disconnectionRequest)
        let frames = CreditBasedSendTests.frames(vc)
        #expect(frames.map(\.count) == Array(repeating: 247, count: 20) + [62])
        #expect(Array(frames.joined()) == [0x88, 0x13] + sdu)
        // The Disconnection Request came after the SDU's last K-frame.
        let received = vc.l2capReceived
        let lastKFrame = try #require(received.lastIndex { $0.channelID == Self.dcid })
        let request = try #require(received.firstIndex { $0.channelID == L2CAPChannelID.leSignaling && $0.payload.first == 0x06 })
        #expect(lastKFrame < request)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 2, body: .disconnectionResponse(destinationCID: Self.dcid, sourceCID: 0x0040)))
        await closing.value
        #expect(await channel.endError == .closed(peer: "\(VC.peer.address)", cid: 0x0040))
        #expect(await channel.unsentSDUs == 0)
        #expect(await channel.bytesSent == 5000)
    }

    @Test func everySendRacingACloseArrivesOrThrows() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMPS: 23, peerCredits: 65535)
        // One task sends 2-byte SDUs (mostly on lent credits, without a hop) until a send throws;
        // another closes the channel meanwhile.
        let sending = Task { () -> (accepted: [[UInt8]], error: L2CAPChannelError?) in
            var accepted: [[UInt8]] = []
            for i in 0..<65535 {
                let sdu = [UInt8(truncatingIfNeeded: i), UInt8(truncatingIfNeeded: i >> 8)]
                do throws(L2CAPChannelError) {
                    try await channel.send(sdu)
                } catch {
                    return (accepted, error)
                }
                accepted.append(sdu)
            }
            return (accepted, nil)
        }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 20)
        // The close first waits for every accepted SDU to reach the link: thousands may be
        // accepted, so its wait and ours are bounded by the suite's time limit, not the pace.
        let closing = Task { await channel.close(timeout: .seconds(50)) }
        #expect(try await CreditBasedChannelTests.waitForSignaling(vc, code: 0x06, timeout: .seconds(50)) == Self.disconnectionRequest)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 2, body: .disconnectionResponse(destinationCID: Self.dcid, sourceCID: 0x0040)))
        await closing.value
        let (accepted, error) = await sending.value
        // Every send that returned reached the peer, in order, before the Disconnection Request;
        // the first one that did not threw `.closed`; nothing arrived after.
        #expect(error == .closed(peer: "\(VC.peer.address)", cid: 0x0040))
        #expect(accepted.count < 65535)
        #expect(CreditBasedSendTests.frames(vc) == accepted.map { [0x02, 0x00] + $0 })
        let received = vc.l2capReceived
        let request = try #require(received.firstIndex { $0.channelID == L2CAPChannelID.leSignaling && $0.payload.first == 0x06 })
        #expect(!received[request...].contains { $0.channelID == Self.dcid })
        #expect(await channel.unsentSDUs == 0)
    }

    @Test func aWaitingSendNotStartedFailsWhenTheChannelCloses() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMPS: 23, peerCredits: 1)
        try await channel.send([0xA1])
        // No credit left: the second send waits; the close fails it at once and goes on.
        let waiting = Task { try await channel.send([0xA2]) }
        try await channel.senders.waitForCount("the send waiting for a credit") { $0 == 1 }
        let closing = Task { await channel.close() }
        await #expect(throws: L2CAPChannelError.closed(peer: "\(VC.peer.address)", cid: 0x0040)) { try await waiting.value }
        #expect(try await CreditBasedChannelTests.waitForSignaling(vc, code: 0x06) == Self.disconnectionRequest)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 2, body: .disconnectionResponse(destinationCID: Self.dcid, sourceCID: 0x0040)))
        await closing.value
        #expect(CreditBasedSendTests.frames(vc) == [[0x01, 0x00, 0xA1]])
        #expect(await channel.unsentSDUs == 0)
    }

    @Test func acceptedSDUsAClosePastItsTimeoutDropsAreCounted() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        await central.host.setACLLimits(linkQueuePDUs: 4)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 100)
        try await channel.send(CreditBasedLinkQueueTests.sdu(0x78, size: 5000))
        await vc.settle()
        // The controller never acknowledges: the close waits 2 s for the SDU, then drops it.
        let closing = vc.task { await channel.close(timeout: .seconds(2)) }
        try await channel.drainers.waitForCount("the close waiting for the accepted SDU") { $0 == 1 }
        await vc.advance(by: .seconds(2))
        try await channel.closers.waitForCount("the close waiting for the Disconnection Response") { $0 == 1 }
        #expect(await channel.endError == .closed(peer: "\(VC.peer.address)", cid: 0x0040))
        #expect(await channel.unsentSDUs == 1)
        #expect(await channel.bytesSent == 0)
        // No response comes either: the close returns after its timeout once more.
        await vc.advance(by: .seconds(2))
        await closing.value
        #expect(CreditBasedSendTests.frames(vc).count == 6)
    }
}
