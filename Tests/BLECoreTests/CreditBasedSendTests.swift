import Testing
import BLECore
import BLETestSupport

/// Sending on an LE credit-based channel from a task: SDUs that find their credits lent are
/// handed over without a hop and go out in order with those that wait (Core Spec 5.4 Vol 3,
/// Part A, 3.4.2 and 10.1); K-frames built straight from the SDU.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedSendTests {
    static let dcid = CreditBasedChannelTests.dcid

    /// The K-frame payloads the peer received on its channel.
    static func frames(_ vc: VirtualController) -> [[UInt8]] {
        vc.l2capReceived.filter { $0.channelID == dcid }.map(\.payload)
    }

    @Test func smallAndLargeSDUsFromATaskKeepOrderAndCredits() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMPS: 23, peerCredits: 10)
        let large1 = (0..<100).map { UInt8($0) }, large3 = (0..<100).map { UInt8(200 - $0) }
        let sdus: [[UInt8]] = [[0xA0], large1, [0xA2], large3]
        // 1 + 5 + 1 K-frames take 7 of the 10 credits; the second large SDU needs 5: 3 go, then it waits.
        let sending = vc.task { for sdu in sdus { try await channel.send(sdu) } }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 10)
        await vc.settle()
        #expect(Self.frames(vc).count == 10)
        #expect(await channel.sendCredits == 0)
        try CreditBasedChannelTests.credit(vc, 4)
        try await sending.value
        let frames = Self.frames(vc)
        #expect(frames.map(\.count) == [3, 23, 23, 23, 23, 10, 3, 23, 23, 23, 23, 10])
        #expect(frames[0] == [0x01, 0x00, 0xA0])
        #expect(frames[1] == [0x64, 0x00] + large1[0..<21])
        #expect(frames[6] == [0x01, 0x00, 0xA2])
        #expect(Array(frames[7...].joined()) == [0x64, 0x00] + large3)
        #expect(await channel.creditStalls == 1)
        #expect(await channel.bytesSent == 202)
        // Two credits were left over: lent again, and one small SDU takes one of them.
        #expect(await channel.sendCredits == 2)
        try await channel.send([0xA4])
        #expect(await channel.sendCredits == 1)
        #expect(try await vc.waitForL2CAP(channelID: Self.dcid, count: 13).payload == [0x01, 0x00, 0xA4])
    }

    @Test func cancellingASendInTheMiddleOfABurst() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMPS: 23, peerCredits: 2)
        let sending = vc.task { for i in 1...4 { try await channel.send([UInt8(i)]) } }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 2)
        await vc.settle()
        // The third SDU waits for a credit: cancelled, it leaves the queue unsent; the fourth never comes.
        sending.cancel()
        await #expect(throws: L2CAPChannelError.cancelled(peer: "\(VC.peer.address)", cid: 0x0040)) { try await sending.value }
        try CreditBasedChannelTests.credit(vc, 2)
        await vc.settle()
        #expect(await channel.sendCredits == 2)
        try await channel.send([0x05])
        #expect(try await vc.waitForL2CAP(channelID: Self.dcid, count: 3).payload == [0x01, 0x00, 0x05])
        #expect(Self.frames(vc) == [[0x01, 0x00, 0x01], [0x01, 0x00, 0x02], [0x01, 0x00, 0x05]])
    }

    @Test func sdusFromSeveralTasksStayWhole() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMPS: 23, peerCredits: 1)
        // Four tasks, 3-K-frame SDUs, one credit at a time: every SDU arrives whole, never interleaved.
        let sdus = (0..<4).map { t in [UInt8](repeating: UInt8(t), count: 50) }
        let senders = sdus.map { sdu in Task { try await channel.send(sdu) } }
        for n in 1...12 {
            try await vc.waitForL2CAP(channelID: Self.dcid, count: n)
            await vc.settle()
            #expect(Self.frames(vc).count == n)
            if n < 12 { try CreditBasedChannelTests.credit(vc, 1) }
        }
        for sender in senders { try await sender.value }
        let frames = Self.frames(vc)
        var received: [[UInt8]] = []
        for i in stride(from: 0, to: 12, by: 3) {
            #expect(frames[i].prefix(2) == [50, 0])
            received.append(Array(frames[i].dropFirst(2)) + frames[i + 1] + frames[i + 2])
        }
        #expect(Set(received) == Set(sdus))
    }
}
