import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport

/// A peer that grants more credits than the link's ACL queue holds (credits × MPS over the
/// queue's 64 KiB and 256-PDU bounds): K-frames wait in the channel while the queue is full
/// and go, in order, when the controller acknowledges packets (Core Spec 5.4 Vol 3, Part A,
/// 3.4.2 and 10.1: the first K-frame of an SDU starts with its 2-byte SDU length; Vol 4,
/// Part E, 4.1). The controller acknowledges only when the test says (`.manual`).
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedLinkQueueTests {
    static let dcid = CreditBasedChannelTests.dcid
    /// The largest SDU (its length field is 16 bits): 266 K-frames at MPS 247, more than the
    /// queue's 256 PDUs; each a 251-byte ACL packet (the controller's LE_ACL_Data_Packet_Length)
    /// but the last, 86 bytes.
    static let sduSize = 65535
    static let framesPerSDU = 266

    static func sdu(_ seed: UInt8, size: Int = sduSize) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    /// The K-frame payloads the peer received, joined per SDU of `framesPerSDU` K-frames.
    static func sdus(_ vc: VirtualController, framesPerSDU: Int = framesPerSDU) -> [[UInt8]] {
        let frames = CreditBasedSendTests.frames(vc)
        return stride(from: 0, to: frames.count, by: framesPerSDU).map { Array(frames[$0..<min(frames.count, $0 + framesPerSDU)].joined()) }
    }

    /// Acknowledges every packet in the controller, round after round, until `total` K-frames
    /// arrived. Each round must bring at least one more: a stall is recorded, never waited out.
    static func acknowledge(_ vc: VirtualController, until total: Int) async {
        var arrived = CreditBasedSendTests.frames(vc).count
        while arrived < total {
            vc.completePackets()
            await vc.settle()
            let now = CreditBasedSendTests.frames(vc).count
            guard now > arrived else {
                Issue.record("no K-frame arrived after acknowledging every packet (\(arrived) of \(total))")
                return
            }
            arrived = now
        }
    }

    @Test func kFramesBeyondTheLinkQueueWaitAndGoInOrder() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        let host = central.host
        let handle = try #require(vc.handle(of: VC.peer))
        #expect(await host.aclLinkQueuePDULimit == 256)
        #expect(await host.aclLinkQueueLimit == 65_536)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 1000)
        let sdus = [Self.sdu(0x00), Self.sdu(0x5A), Self.sdu(0xA5)]
        // 798 K-frames with credit for all. A send returns once its SDU holds its credits (handed
        // over) or, when the link's queue filled first, once its K-frames are on the link.
        let sending = vc.task { for sdu in sdus { try await channel.send(sdu) } }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 6)
        await vc.settle()
        // The controller holds 7 packets (one of its 8 buffers stays free): the unacknowledged
        // connection request and 6 K-frames. The queue takes 256 K-frames of 251 bytes (64,256
        // bytes, under the byte bound): the PDU bound is the one reached; the rest of the first
        // SDU (4 K-frames) and the other two wait in the channel.
        #expect(CreditBasedSendTests.frames(vc).count == 6)
        let status = try #require(await host.aclLinkStatus(handle: handle))
        #expect(status.inFlight == 7)
        #expect(status.queuedPDUs == 256)
        #expect(status.queuedBytes == 256 * 251)
        #expect(await channel.linkQueueStalls == 1)

        await Self.acknowledge(vc, until: 3 * Self.framesPerSDU)
        try await sending.value
        #expect(CreditBasedSendTests.frames(vc).count == 3 * Self.framesPerSDU)
        #expect(Self.sdus(vc) == sdus.map { [0xFF, 0xFF] + $0 })
        #expect(CreditBasedSendTests.frames(vc)[265].count == 82, "the last K-frame: 65,535 - 245 - 264 × 247 bytes")
        #expect(await host.failedOutboundPDUs == (timedOut: 0, queueFull: 0))
        #expect(vc.aclFlowControlViolations == 0)
        // A wake-up comes once the queue drained to 128 PDUs and refills it: the 536 K-frames
        // that waited in the channel take 4 or 5 waits (one more when the sending task's last
        // SDU reached the channel after it had sent everything before).
        let stalls = await channel.linkQueueStalls
        #expect((4...6).contains(stalls), "\(stalls) waits for room")
        #expect(await channel.creditStalls == 0)
        #expect(await channel.bytesSent == 3 * Self.sduSize)
        #expect(await channel.sendCredits == 1000 - 3 * Self.framesPerSDU)
        #expect(await channel.unsentSDUs == 0)
    }

    @Test func aKFrameLargerThanTheWholeQueueGoesThroughAnEmptyQueue() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        // 1 KiB and 2 PDUs: every 2,004-byte K-frame (MPS 2000) is larger than the whole queue.
        await central.host.setACLLimits(linkQueueBytes: 1024, linkQueuePDUs: 2)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 2000, peerCredits: 10)
        let sdu = Self.sdu(0x3C, size: 5000)
        let before = vc.aclReceived.count
        let sending = Task {
            try await channel.send(sdu)
            try await channel.send([0x42])
        }
        // The first K-frame (8 ACL fragments of at most 251 bytes) takes the empty queue; 6 of
        // its fragments reach the controller; the rest of the SDU waits in the channel.
        try await vc.waitForACL(count: before + 6)
        await vc.settle()
        #expect(await central.host.aclLinkStatus(handle: channel.handle)?.queuedPDUs == 1)
        #expect(await central.host.aclLinkStatus(handle: channel.handle)?.queuedBytes == 2004 - 6 * 251)
        await Self.acknowledge(vc, until: 4)
        try await sending.value
        let frames = CreditBasedSendTests.frames(vc)
        // 5000 = 0x1388: 2 + 1998, 2000, 1002 bytes; then the 1-byte SDU.
        #expect(frames.map(\.count) == [2000, 2000, 1002, 3])
        #expect(Array(frames[0..<3].joined()) == [0x88, 0x13] + sdu)
        #expect(frames[3] == [0x01, 0x00, 0x42])
        #expect(await central.host.failedOutboundPDUs == (timedOut: 0, queueFull: 0))
        #expect(await channel.linkQueueStalls >= 1)
    }

    @Test func aSendThatFindsTheLinkQueueFullTimesOutUnsent() async throws {
        let (vc, central) = try await VC.stack { $0.packetCompletion = .manual }
        let connection = try await central.connect(VC.peer)
        await central.host.setACLLimits(sendTimeout: .seconds(60))
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 65535, peerMPS: 247, peerCredits: 1000)
        let first = Self.sdu(0x11), second = Self.sdu(0x22)
        let sending = Task {
            try await channel.send(first)
            try await channel.send(second, timeout: .seconds(60))
        }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 6)
        await vc.settle()
        // The first SDU is started and waits for room; a third waits behind the second and
        // times out, unsent.
        let waiting = await channel.isolated { $0.senders.count }
        let third = vc.task { try await channel.send(Self.sdu(0x33), timeout: .seconds(5)) }
        try await channel.senders.waitForCount("the third send waiting") { $0 == waiting + 1 }
        await vc.settle()
        await vc.advance(by: .seconds(5))
        await #expect(throws: L2CAPChannelError.linkQueueTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(5))) { try await third.value }
        #expect(L2CAPChannelError.linkQueueTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(5)).description.contains("stopped acknowledging"))

        // Once the controller acknowledges, the two SDUs arrive whole; none of the third went out.
        await Self.acknowledge(vc, until: 2 * Self.framesPerSDU)
        try await sending.value
        await vc.settle()
        #expect(CreditBasedSendTests.frames(vc).count == 2 * Self.framesPerSDU)
        #expect(Self.sdus(vc) == [[0xFF, 0xFF] + first, [0xFF, 0xFF] + second])
        #expect(await central.host.failedOutboundPDUs == (timedOut: 0, queueFull: 0))
        #expect(await channel.sendCredits == 1000 - 2 * Self.framesPerSDU)
    }
}
