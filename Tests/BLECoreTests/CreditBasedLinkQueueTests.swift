import Testing
import BLECore
import BLETestSupport

/// A peer that grants more credits than the link's ACL queue holds (credits × MPS over the
/// queue's 64 KiB bound): K-frames wait in the channel while the queue is full and go, in
/// order, when the controller acknowledges packets (Core Spec 5.4 Vol 3, Part A, 3.4.2 and
/// 10.1: the first K-frame of an SDU starts with its 2-byte SDU length; Vol 4, Part E, 4.1).
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedLinkQueueTests {
    static let dcid = CreditBasedChannelTests.dcid
    /// The largest SDU (its length field is 16 bits): 266 K-frames at MPS 247, each a 251-byte
    /// ACL packet (the controller's LE_ACL_Data_Packet_Length).
    static let sduSize = 65535
    static let framesPerSDU = 266

    static func sdu(_ seed: UInt8) -> [UInt8] { (0..<sduSize).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    /// The SDUs the peer received, rebuilt from its K-frames (every SDU is `framesPerSDU` long).
    static func sdus(_ vc: VirtualController) -> [[UInt8]] {
        let frames = CreditBasedSendTests.frames(vc)
        return stride(from: 0, to: frames.count, by: framesPerSDU).map { Array(frames[$0..<min(frames.count, $0 + framesPerSDU)].joined()) }
    }

    /// Acknowledges every packet in the controller until `total` K-frames arrived, waiting for
    /// each batch the host sends.
    static func acknowledge(_ vc: VirtualController, until total: Int) async throws {
        var arrived = CreditBasedSendTests.frames(vc).count
        while arrived < total {
            vc.completePackets()
            try await vc.waitForL2CAP(channelID: dcid, count: arrived + 1)
            await vc.settle()
            arrived = CreditBasedSendTests.frames(vc).count
        }
    }

    @Test func kFramesBeyondTheLinkQueueWaitAndGoInOrder() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        let host = central.host
        let handle = try #require(vc.handle(of: VC.peer))
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 1000)
        let sdus = [Self.sdu(0x00), Self.sdu(0x5A), Self.sdu(0xA5)]
        // 798 K-frames with credit for all: each send returns once its SDU holds its credits.
        for sdu in sdus { try await channel.send(sdu) }
        await vc.settle()
        // The controller holds 7 packets (one of its 8 buffers stays free): the unacknowledged
        // connection request and 6 K-frames; the queue holds what fits in 64 KiB (65,346
        // bytes, ending with the first SDU's 86-byte last K-frame); the rest waits in the channel.
        #expect(CreditBasedSendTests.frames(vc).count == 6)
        let status = try #require(await host.aclLinkStatus(handle: handle))
        #expect(status.inFlight == 7)
        #expect(status.queuedBytes == 65_346, "the next 251-byte K-frame would pass 65,536")
        #expect(await channel.linkQueueStalls == 1)

        try await Self.acknowledge(vc, until: 3 * Self.framesPerSDU)
        #expect(CreditBasedSendTests.frames(vc).count == 3 * Self.framesPerSDU)
        #expect(Self.sdus(vc) == sdus.map { [0xFF, 0xFF] + $0 })
        #expect(await host.failedOutboundPDUs == (timedOut: 0, queueFull: 0))
        #expect(vc.aclFlowControlViolations == 0)
        #expect(await channel.linkQueueStalls > 1)
        #expect(await channel.creditStalls == 0)
        #expect(await channel.bytesSent == 3 * Self.sduSize)
        #expect(await channel.sendCredits == 1000 - 3 * Self.framesPerSDU)
    }

    @Test func aSendThatFindsTheLinkQueueFullTimesOutUnsent() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        await central.host.setACLLimits(sendTimeout: .seconds(60))
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 1000)
        let first = Self.sdu(0x11), second = Self.sdu(0x22)
        try await channel.send(first)
        try await channel.send(second)
        await vc.settle()
        // The second SDU is started and waits for room; a third waits behind it and times out.
        let third = Task { try await channel.send(Self.sdu(0x33), timeout: .seconds(5)) }
        await vc.settle()
        await vc.advance(by: .seconds(5))
        await #expect(throws: L2CAPChannelError.linkQueueTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(5))) { try await third.value }
        #expect(L2CAPChannelError.linkQueueTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(5)).description.contains("stopped acknowledging"))

        // Once the controller acknowledges, the two SDUs arrive whole; none of the third went out.
        try await Self.acknowledge(vc, until: 2 * Self.framesPerSDU)
        await vc.settle()
        #expect(CreditBasedSendTests.frames(vc).count == 2 * Self.framesPerSDU)
        #expect(Self.sdus(vc) == [[0xFF, 0xFF] + first, [0xFF, 0xFF] + second])
        #expect(await central.host.failedOutboundPDUs == (timedOut: 0, queueFull: 0))
        #expect(await channel.sendCredits == 1000 - 2 * Self.framesPerSDU)
    }
}
