import Testing
import BLECore
import BLETestSupport
import BLEWire

/// LE credit-based channels through the virtual controller, with the test playing the peer's
/// L2CAP (Core Spec 5.4 Vol 3, Part A, 4.22-4.24 and 10.1). Timeouts run on virtual time.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedChannelTests {
    static let dcid: UInt16 = 0x0050

    /// Opens a channel to PSM 0x0080 and answers as the peer; returns the channel and the request.
    static func open(_ vc: VirtualController, _ connection: Connection, mtu: Int = 512, mps: Int = 100, credits: Int = 4,
                     peerMTU: UInt16 = 256, peerMPS: UInt16 = 23, peerCredits: UInt16 = 3) async throws -> (CreditBasedChannel, [UInt8]) {
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080, mtu: mtu, mps: mps, credits: credits) }
        let request = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        let command = try L2CAPSignalingCommand(bytes: request.payload)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: command.identifier, body: .leCreditBasedConnectionResponse(
            destinationCID: dcid, mtu: peerMTU, mps: peerMPS, initialCredits: peerCredits, result: 0)))
        return (try await task.value, request.payload)
    }

    static func credit(_ vc: VirtualController, _ credits: UInt16, id: UInt8 = 0x21) throws {
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: id, body: .flowControlCreditIndication(cid: dcid, credits: credits)))
    }

    static func signaling(_ vc: VirtualController) -> [L2CAPSignalingCommand.Body] { vc.signalingReceived.map(\.body) }

    /// Credits the host granted in all its Flow Control Credit Indications (4.24).
    static func granted(_ vc: VirtualController) -> Int {
        signaling(vc).reduce(0) { n, b in if case .flowControlCreditIndication(_, let c) = b { n + Int(c) } else { n } }
    }

    /// The bytes of the `count`-th signaling command with `code` from the host.
    static func waitForSignaling(_ vc: VirtualController, code: UInt8, count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [UInt8] {
        try await vc.waitUntil("signaling code \(code) #\(count)", timeout: timeout) { _ in vc.signalingReceived.filter { $0.code == code }.count >= count }
        return vc.signalingReceived.filter { $0.code == code }[count - 1].bytes
    }

    @Test func sendNeverExceedsCreditsOrThePeersMPS() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, request) = try await Self.open(vc, connection)
        // 4.22: code 0x14, id 1, length 10, SPSM 0x0080, SCID 0x0040, MTU 512, MPS 100, credits 4.
        #expect(request == [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        #expect(channel.localCID == 0x0040 && channel.remoteCID == Self.dcid)
        #expect(await channel.peerMPS == 23)
        let sdu = (0..<100).map { UInt8($0) }
        let send = vc.task { try await channel.send(sdu) }
        try await vc.waitForL2CAP(channelID: Self.dcid, count: 3)
        await vc.settle()
        // Three credits: three of the five K-frames, then the send waits.
        #expect(vc.l2capReceived.filter { $0.channelID == Self.dcid }.count == 3)
        try Self.credit(vc, 2)
        try await send.value
        let frames = vc.l2capReceived.filter { $0.channelID == Self.dcid }.map(\.payload)
        #expect(frames.map(\.count) == [23, 23, 23, 23, 10])
        #expect(Array(frames.joined()) == [0x64, 0x00] + sdu)
        #expect(await channel.creditStalls == 1)
    }

    @Test func receivedSDUsHoldCreditsUntilTaken() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, mps: 23, credits: 4)
        for i in 0..<4 { try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x01, 0x00, UInt8(i)]) }
        await vc.settle()
        // Four SDUs wait; no credit went back yet.
        #expect(!Self.signaling(vc).contains { if case .flowControlCreditIndication = $0 { true } else { false } })
        #expect(try await channel.receive() == [0])
        let indication = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 2)
        // 4.24: code 0x16, length 4, CID 0x0040 (our source CID), 1 credit.
        #expect(indication.payload == [0x16, 0x02, 0x04, 0x00, 0x40, 0x00, 0x01, 0x00])
        #expect(try await channel.receive() == [1])
    }

    @Test func sdusTakenFromATaskKeepOrderAndTheCreditBound() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, mps: 23, credits: 8)
        for i in 0..<8 { try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x01, 0x00, UInt8(i)]) }
        await vc.settle()
        // The first receive takes the eight SDUs in one hop; credits go back only for those taken.
        var taken: [[UInt8]] = []
        for _ in 0..<4 { taken.append(try #require(try await channel.receive())) }
        await vc.settle()
        #expect(Self.granted(vc) <= 4)
        for _ in 0..<4 { taken.append(try #require(try await channel.receive())) }
        #expect(taken == (0..<8).map { [UInt8($0)] })
        // Back for more: everything taken is credited (10.1), and the next SDU reaches the waiting reader.
        let next = Task { try await channel.receive(timeout: .seconds(5)) }
        try await vc.waitUntil("eight credits back") { _ in Self.granted(vc) == 8 }
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x01, 0x00, 0x08])
        #expect(try await next.value == [0x08])
    }

    @Test func multiFrameSDUIsReassembled() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, mtu: 1000, mps: 23, credits: 2)
        let sdu = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        // 14 K-frames with a window of 2: the host credits the partial SDU back as it goes.
        let receiving = Task { try await channel.receive() }
        var sent = 0
        for frame in KFrameSegmenter.segments(of: sdu, mps: 23) {
            if sent >= 2 {
                let granted = Self.signaling(vc).reduce(0) { n, b in if case .flowControlCreditIndication(_, let c) = b { n + Int(c) } else { n } }
                if sent >= 2 + granted {
                    try await vc.waitUntil("a credit") { _ in
                        Self.signaling(vc).reduce(0) { n, b in if case .flowControlCreditIndication(_, let c) = b { n + Int(c) } else { n } } > granted
                    }
                }
            }
            try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: frame)
            sent += 1
        }
        #expect(try await receiving.value == sdu)
    }

    @Test func malformedKFrameClosesTheChannelOnly() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection)
        // SDU Length 2 with three data octets.
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x02, 0x00, 1, 2, 3])
        await #expect(throws: L2CAPChannelError.malformedKFrame(peer: "\(VC.peer.address)", cid: 0x0040, .sduOverrun(sduLength: 2, received: 3))) {
            try await channel.receive()
        }
        let request = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 2)
        // 4.6 Disconnection Request: code 0x06, length 4, DCID 0x0050, SCID 0x0040.
        #expect(request.payload == [0x06, 0x02, 0x04, 0x00, 0x50, 0x00, 0x40, 0x00])
        #expect(await connection.isConnected)
        // The link goes on: a second channel opens.
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080) }
        let second = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 3)
        let command = try L2CAPSignalingCommand(bytes: second.payload)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: command.identifier, body: .leCreditBasedConnectionResponse(
            destinationCID: 0x0051, mtu: 100, mps: 50, initialCredits: 1, result: 0)))
        #expect(try await task.value.remoteCID == 0x0051)
    }

    @Test func peerWithoutCreditsTimesOutTheSend() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, peerCredits: 0)
        let send = vc.task { try await channel.send([1, 2, 3], timeout: .seconds(10)) }
        await vc.settle()
        await vc.advance(by: .seconds(10))
        await #expect(throws: L2CAPChannelError.creditTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(10))) { try await send.value }
        #expect(vc.l2capReceived.filter { $0.channelID == Self.dcid }.isEmpty)
        // The SDU was never started: it left the queue, so a later credit sends nothing.
        try Self.credit(vc, 1)
        await vc.settle()
        #expect(vc.l2capReceived.filter { $0.channelID == Self.dcid }.isEmpty)
    }

    @Test func cancelledSendStopsWaiting() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, peerCredits: 0)
        let send = vc.task { try await channel.send([1, 2, 3]) }
        await vc.settle()
        send.cancel()
        await #expect(throws: L2CAPChannelError.cancelled(peer: "\(VC.peer.address)", cid: 0x0040)) { try await send.value }
    }

    @Test func refusedPSMIsATypedError() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0099) }
        let request = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request.payload[1], body: .leCreditBasedConnectionResponse(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: 0x0002)))
        await #expect(throws: L2CAPChannelError.refused(peer: "\(VC.peer.address)", psm: 0x0099, result: .psmNotSupported)) { try await task.value }
    }

    @Test func unansweredRequestTimesOut() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let task = vc.task { try await connection.openL2CAPChannel(psm: 0x0080, timeout: .seconds(20)) }
        try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        await vc.advance(by: .seconds(20))
        await #expect(throws: L2CAPChannelError.responseTimeout(peer: "\(VC.peer.address)", psm: 0x0080, after: .seconds(20))) { try await task.value }
    }

    @Test func linkLossFailsPendingWorkAtOnce() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection, peerCredits: 0)
        let send = vc.task { try await channel.send([1]) }
        let receive = vc.task { try await channel.receive() }
        await vc.settle()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        let error = L2CAPChannelError.link(.disconnected(peer: VC.peer.address, reason: .connectionTimeout))
        await #expect(throws: error) { try await send.value }
        await #expect(throws: error) { try await receive.value }
    }

    @Test func peerOpensAChannelToARegisteredPSM() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        var incoming = try await connection.acceptL2CAPChannels(psm: 0x0081, mtu: 300, mps: 60, credits: 5).makeAsyncIterator()
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 3, body: .leCreditBasedConnectionRequest(
            psm: 0x0081, sourceCID: 0x0045, mtu: 100, mps: 50, initialCredits: 2)))
        let response = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        // 4.23: DCID 0x0040, MTU 300, MPS 60, credits 5, result success.
        #expect(response.payload == [0x15, 0x03, 0x0A, 0x00, 0x40, 0x00, 0x2C, 0x01, 0x3C, 0x00, 0x05, 0x00, 0x00, 0x00])
        let channel = try #require(await incoming.next())
        #expect(channel.remoteCID == 0x0045)
        #expect(await channel.peerMTU == 100)
        #expect(await channel.peerMPS == 50)
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x02, 0x00, 0xAB, 0xCD])
        #expect(try await channel.receive() == [0xAB, 0xCD])
        try await channel.send([0x01])
        #expect(try await vc.waitForL2CAP(channelID: 0x0045).payload == [0x01, 0x00, 0x01])
        // A PSM nobody serves: result 0x0002; an invalid source CID: 0x0009.
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 4, body: .leCreditBasedConnectionRequest(
            psm: 0x0082, sourceCID: 0x0046, mtu: 100, mps: 50, initialCredits: 2)))
        #expect(try await Self.waitForSignaling(vc, code: 0x15, count: 2) == [0x15, 0x04, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8) + [0x02, 0x00])
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 5, body: .leCreditBasedConnectionRequest(
            psm: 0x0081, sourceCID: 0x0001, mtu: 100, mps: 50, initialCredits: 2)))
        #expect(try await Self.waitForSignaling(vc, code: 0x15, count: 3) == [0x15, 0x05, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8) + [0x09, 0x00])
        // The peer closes: 4.7 Disconnection Response echoes DCID 0x0040, SCID 0x0045; receive ends.
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 6, body: .disconnectionRequest(destinationCID: 0x0040, sourceCID: 0x0045)))
        #expect(try await Self.waitForSignaling(vc, code: 0x07) == [0x07, 0x06, 0x04, 0x00, 0x40, 0x00, 0x45, 0x00])
        #expect(try await channel.receive() == nil)
    }

    @Test func localCloseSendsDisconnectionRequest() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await Self.open(vc, connection)
        let closing = Task { await channel.close() }
        let request = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 2)
        #expect(request.payload == [0x06, 0x02, 0x04, 0x00, 0x50, 0x00, 0x40, 0x00])
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 2, body: .disconnectionResponse(destinationCID: 0x0050, sourceCID: 0x0040)))
        await closing.value
        await #expect(throws: L2CAPChannelError.closed(peer: "\(VC.peer.address)", cid: 0x0040)) { try await channel.send([1]) }
    }
}
