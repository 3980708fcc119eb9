import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Enhanced credit-based channels through the virtual controller, with the test playing the
/// peer's L2CAP: L2CAP_CREDIT_BASED_CONNECTION_REQ/RSP and RECONFIGURE_REQ/RSP in the layouts
/// of Core Spec 5.4 Vol 3, Part A, 4.25-4.28, both directions. Timeouts run on virtual time.
@Suite(.timeLimit(.minutes(1)))
struct EnhancedCreditBasedChannelTests {
    static var peerName: String { "\(VC.peer.address)" }

    /// The `count`-th signaling command with `code` the host sent.
    static func signaling(_ vc: VirtualController, code: UInt8, count: Int = 1) async throws -> [UInt8] {
        try await vc.waitUntil("signaling code \(code) #\(count)") { _ in vc.signalingReceived.filter { $0.code == code }.count >= count }
        return vc.signalingReceived.filter { $0.code == code }[count - 1].bytes
    }

    /// Opens `count` enhanced channels to PSM 0x0080 (MTU 512, MPS 100, 4 credits) and answers
    /// with `dcids`, MTU 256, MPS 64, 3 credits and `result`.
    static func open(_ vc: VirtualController, _ connection: Connection, count: Int, dcids: [UInt16], result: UInt16 = 0,
                     requestNumber: Int = 1) async throws -> (Task<[CreditBasedChannel], any Error>, [UInt8]) {
        let task = Task<[CreditBasedChannel], any Error> { try await connection.openL2CAPChannels(psm: 0x0080, count: count, mtu: 512, mps: 100, credits: 4) }
        let request = try await signaling(vc, code: 0x17, count: requestNumber)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 256, mps: 64, initialCredits: 3, result: result, destinationCIDs: dcids)))
        return (task, request)
    }

    @Test func opensThreeChannelsWithOneRequest() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (task, request) = try await Self.open(vc, connection, count: 3, dcids: [0x0050, 0x0051, 0x0052])
        // 4.25: code 0x17, id 1, length 8 + 3 x 2, SPSM 0x0080, MTU 512, MPS 100, credits 4, SCIDs 0x0040-0x0042.
        #expect(request == [0x17, 0x01, 0x0E, 0x00, 0x80, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00, 0x40, 0x00, 0x41, 0x00, 0x42, 0x00])
        let channels = try await task.value
        #expect(channels.map(\.localCID) == [0x0040, 0x0041, 0x0042])
        #expect(channels.map(\.remoteCID) == [0x0050, 0x0051, 0x0052])
        #expect(channels.map(\.isEnhanced) == [true, true, true])
        #expect(await channels[1].peerMPS == 64)
        #expect(await channels[1].peerMTU == 256)
        #expect(await channels[1].sendCredits == 3)
        try await channels[1].send([0xAB])
        #expect(try await vc.waitForL2CAP(channelID: 0x0051).payload == [0x01, 0x00, 0xAB])
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0042, payload: [0x02, 0x00, 0x01, 0x02])
        #expect(try await channels[2].receive() == [0x01, 0x02])
    }

    /// Five channels, the most one request may carry (4.25: "up to 5 Source CIDs").
    @Test func opensFiveChannelsWithOneRequest() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let dcids: [UInt16] = [0x0050, 0x0051, 0x0052, 0x0053, 0x0054]
        let (task, request) = try await Self.open(vc, connection, count: 5, dcids: dcids)
        // 4.25: code 0x17, id 1, length 8 + 5 x 2, SPSM 0x0080, MTU 512, MPS 100, credits 4, SCIDs 0x0040-0x0044.
        #expect(request == [0x17, 0x01, 0x12, 0x00, 0x80, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00,
                            0x40, 0x00, 0x41, 0x00, 0x42, 0x00, 0x43, 0x00, 0x44, 0x00])
        let channels = try await task.value
        #expect(channels.map(\.localCID) == [0x0040, 0x0041, 0x0042, 0x0043, 0x0044])
        #expect(channels.map(\.remoteCID) == dcids)
        #expect(channels.map(\.isEnhanced) == [true, true, true, true, true])
        for (i, channel) in channels.enumerated() {
            #expect(await channel.peerMTU == 256)
            #expect(await channel.peerMPS == 64)
            #expect(await channel.sendCredits == 3)
            // One SDU each way: SDU Length 2, then the channel's index twice.
            let byte = UInt8(i)
            try await channel.send([byte, byte])
            #expect(try await vc.waitForL2CAP(channelID: dcids[i]).payload == [0x02, 0x00, byte, byte])
            try vc.sendL2CAP(from: VC.peer, channelID: channel.localCID, payload: [0x01, 0x00, 0xA0 + byte])
            #expect(try await channel.receive() == [0xA0 + byte])
        }
    }

    @Test func someRefusedGivesTheOthers() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // 4.26: result 0x0004 (some refused, insufficient resources), the second DCID 0x0000.
        let (task, _) = try await Self.open(vc, connection, count: 2, dcids: [0x0050, 0x0000], result: 0x0004)
        let channels = try await task.value
        #expect(channels.map(\.localCID) == [0x0040])
        // The refused channel's CID is free again.
        let (again, request) = try await Self.open(vc, connection, count: 1, dcids: [0x0051], requestNumber: 2)
        #expect(Array(request.suffix(2)) == [0x41, 0x00])
        #expect(try await again.value.map(\.localCID) == [0x0041])
    }

    @Test func allRefusedIsATypedError() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // A peer that lists no DCID when it refuses all (as Bumble does).
        let (task, _) = try await Self.open(vc, connection, count: 2, dcids: [], result: 0x0002)
        await #expect(throws: L2CAPChannelError.refused(peer: Self.peerName, psm: 0x0080, result: .psmNotSupported)) { try await task.value }
        let (secure, _) = try await Self.open(vc, connection, count: 1, dcids: [0x0000], result: 0x0005, requestNumber: 2)
        // Without a security raiser on the connection, a refusal for security says pairing is needed.
        await #expect(throws: L2CAPChannelError.securityNeeded(peer: Self.peerName, psm: 0x0080, needed: .encrypted, refusal: .insufficientAuthentication, reason: nil)) { try await secure.value }
        await #expect(throws: L2CAPChannelError.invalidChannelCount(6)) { try await connection.openL2CAPChannels(psm: 0x0080, count: 6) }
        #expect(vc.signalingReceived.filter { $0.code == 0x17 }.count == 2)
    }

    @Test func responseBreakingTheRulesIsInvalid() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // Success with a DCID outside the dynamic range.
        let (task, _) = try await Self.open(vc, connection, count: 2, dcids: [0x0050, 0x0003])
        await #expect(throws: L2CAPChannelError.invalidResponse(peer: Self.peerName, psm: 0x0080, detail: "Destination CIDs [0x0050 0x0003] for 2 channels, MTU 256, MPS 64")) {
            try await task.value
        }
    }

    @Test func pendingResultWaitsForTheFinalResponse() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // 0x000E: all connections pending, authentication pending; the final answer follows.
        let (task, request) = try await Self.open(vc, connection, count: 1, dcids: [0x0000], result: 0x000E)
        await vc.settle()
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 100, mps: 64, initialCredits: 1, result: 0, destinationCIDs: [0x0060])))
        #expect(try await task.value.map(\.remoteCID) == [0x0060])
    }

    @Test func unansweredRequestTimesOutAndCancelStops() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let task = vc.task { try await connection.openL2CAPChannels(psm: 0x0080, count: 2, timeout: .seconds(20)) }
        _ = try await Self.signaling(vc, code: 0x17)
        await vc.advance(by: .seconds(20))
        await #expect(throws: L2CAPChannelError.responseTimeout(peer: Self.peerName, psm: 0x0080, after: .seconds(20))) { try await task.value }
        let cancelled = Task { try await connection.openL2CAPChannels(psm: 0x0080, count: 2) }
        _ = try await Self.signaling(vc, code: 0x17, count: 2)
        cancelled.cancel()
        await #expect(throws: L2CAPChannelError.cancelled(peer: Self.peerName, cid: 0x0040)) { try await cancelled.value }
    }

    @Test func peerOpensEnhancedChannels() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        var incoming = try await connection.acceptL2CAPChannels(psm: 0x0081, mtu: 300, mps: 60, credits: 5).makeAsyncIterator()
        // SCIDs 0x0045, 0x0046, an invalid 0x0001 and 0x0045 again.
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 3, body: .creditBasedConnectionRequest(
            psm: 0x0081, mtu: 100, mps: 64, initialCredits: 2, sourceCIDs: [0x0045, 0x0046, 0x0001, 0x0045])))
        // 4.26: MTU 300, MPS 64 (the server's 60 raised to the enhanced minimum), credits 5,
        // result 0x0009 (some refused, invalid Source CID), DCIDs 0x0040 0x0041 0x0000 0x0000.
        #expect(try await Self.signaling(vc, code: 0x18) == [0x18, 0x03, 0x10, 0x00, 0x2C, 0x01, 0x40, 0x00, 0x05, 0x00, 0x09, 0x00,
                                                             0x40, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00])
        let first = try #require(await incoming.next())
        let second = try #require(await incoming.next())
        #expect([first.remoteCID, second.remoteCID] == [0x0045, 0x0046] && first.isEnhanced)
        #expect(await first.mps == 64)
        #expect(await first.peerMTU == 100)
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0041, payload: [0x01, 0x00, 0x07])
        #expect(try await second.receive() == [0x07])
        // A PSM nobody serves: 0x0002, every DCID 0x0000; an MPS below 64: 0x000C.
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 4, body: .creditBasedConnectionRequest(
            psm: 0x0082, mtu: 100, mps: 64, initialCredits: 2, sourceCIDs: [0x0047])))
        #expect(try await Self.signaling(vc, code: 0x18, count: 2) == [0x18, 0x04, 0x0A, 0x00] + [UInt8](repeating: 0, count: 6) + [0x02, 0x00, 0x00, 0x00])
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 5, body: .creditBasedConnectionRequest(
            psm: 0x0081, mtu: 100, mps: 23, initialCredits: 2, sourceCIDs: [0x0047])))
        #expect(try await Self.signaling(vc, code: 0x18, count: 3) == [0x18, 0x05, 0x0A, 0x00] + [UInt8](repeating: 0, count: 6) + [0x0C, 0x00, 0x00, 0x00])
    }

    @Test func peerOpensFiveChannelsToUs() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        var incoming = try await connection.acceptL2CAPChannels(psm: 0x0081, mtu: 300, mps: 100, credits: 5).makeAsyncIterator()
        let scids: [UInt16] = [0x0045, 0x0046, 0x0047, 0x0048, 0x0049]
        // 4.25: code 0x17, id 7, length 8 + 5 x 2, SPSM 0x0081, MTU 100, MPS 64, credits 2, five SCIDs.
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 7, body: .creditBasedConnectionRequest(
            psm: 0x0081, mtu: 100, mps: 64, initialCredits: 2, sourceCIDs: scids)))
        // 4.26: code 0x18, id 7, length 8 + 5 x 2, MTU 300, MPS 100, credits 5, result 0x0000, DCIDs 0x0040-0x0044.
        #expect(try await Self.signaling(vc, code: 0x18) == [0x18, 0x07, 0x12, 0x00, 0x2C, 0x01, 0x64, 0x00, 0x05, 0x00, 0x00, 0x00,
                                                             0x40, 0x00, 0x41, 0x00, 0x42, 0x00, 0x43, 0x00, 0x44, 0x00])
        var accepted: [CreditBasedChannel] = []
        for _ in 0..<5 { accepted.append(try #require(await incoming.next())) }
        #expect(accepted.map(\.localCID) == [0x0040, 0x0041, 0x0042, 0x0043, 0x0044])
        #expect(accepted.map(\.remoteCID) == scids)
        #expect(accepted.map(\.isEnhanced) == [true, true, true, true, true])
        for (i, channel) in accepted.enumerated() {
            #expect(await channel.peerMTU == 100)
            #expect(await channel.peerMPS == 64)
            #expect(await channel.sendCredits == 2)
            let byte = UInt8(i)
            try vc.sendL2CAP(from: VC.peer, channelID: channel.localCID, payload: [0x02, 0x00, 0xB0 + byte, byte])
            #expect(try await channel.receive() == [0xB0 + byte, byte])
            try await channel.send([byte])
            #expect(try await vc.waitForL2CAP(channelID: scids[i]).payload == [0x01, 0x00, byte])
        }
    }

    @Test func reconfigureThisSide() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (task, _) = try await Self.open(vc, connection, count: 2, dcids: [0x0050, 0x0051])
        let channels = try await task.value
        let reconfiguring = Task { try await connection.reconfigureL2CAPChannels(channels, mtu: 1024) }
        // 4.27: code 0x19, length 4 + 2 x 2, MTU 1024, MPS 100 (kept), CIDs 0x0040 0x0041.
        let request = try await Self.signaling(vc, code: 0x19)
        #expect(request == [0x19, request[1], 0x08, 0x00, 0x00, 0x04, 0x64, 0x00, 0x40, 0x00, 0x41, 0x00])
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedReconfigureResponse(result: 0)))
        try await reconfiguring.value
        #expect(await channels[0].mtu == 1024)
        #expect(await channels[1].mtu == 1024)
        // A 600-byte SDU fits the new MTU (it would have closed the channel at 512).
        let sdu = [UInt8](repeating: 0x5A, count: 600)
        // Seven K-frames through a window of 4: the partial SDU's credits come back as it arrives.
        for frame in KFrameSegmenter.segments(of: sdu, mps: 100) { try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: frame) }
        #expect(try await channels[0].receive() == sdu)
        // Refused here, before asking: a smaller MTU; and by the peer: result 0x0004.
        await #expect(throws: L2CAPChannelError.reconfigurationRefused(peer: Self.peerName, result: .mtuReductionNotAllowed)) {
            try await channels[1].reconfigure(mtu: 512)
        }
        let refused = Task { try await channels[1].reconfigure(mtu: 2048, mps: 64) }
        let second = try await Self.signaling(vc, code: 0x19, count: 2)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: second[1], body: .creditBasedReconfigureResponse(result: 0x0004)))
        await #expect(throws: L2CAPChannelError.reconfigurationRefused(peer: Self.peerName, result: .unacceptableParameters)) { try await refused.value }
        #expect(await channels[1].mtu == 1024)
    }

    @Test func peerReconfigures() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (task, _) = try await Self.open(vc, connection, count: 2, dcids: [0x0050, 0x0051])
        let channels = try await task.value
        func reconfigure(_ id: UInt8, mtu: UInt16, mps: UInt16, _ cids: [UInt16]) async throws -> [UInt8] {
            try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: id, body: .creditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: cids)))
            return try await Self.signaling(vc, code: 0x1A, count: Int(id) - 9)
        }
        // 4.28: code 0x1A, length 2, result. The peer lists its own CIDs.
        #expect(try await reconfigure(10, mtu: 512, mps: 80, [0x0050, 0x0051]) == [0x1A, 10, 0x02, 0x00, 0x00, 0x00])
        #expect(await channels[0].peerMTU == 512)
        #expect(await channels[1].peerMPS == 80)
        #expect(try await reconfigure(11, mtu: 300, mps: 80, [0x0050]) == [0x1A, 11, 0x02, 0x00, 0x01, 0x00])
        #expect(try await reconfigure(12, mtu: 512, mps: 64, [0x0050, 0x0051]) == [0x1A, 12, 0x02, 0x00, 0x02, 0x00])
        #expect(try await reconfigure(13, mtu: 512, mps: 64, [0x0050, 0x0077]) == [0x1A, 13, 0x02, 0x00, 0x03, 0x00])
        #expect(try await reconfigure(14, mtu: 512, mps: 23, [0x0050]) == [0x1A, 14, 0x02, 0x00, 0x04, 0x00])
        // One channel may shrink its MPS: its SDUs then go out in K-frames of at most 64 octets.
        #expect(try await reconfigure(15, mtu: 512, mps: 64, [0x0051]) == [0x1A, 15, 0x02, 0x00, 0x00, 0x00])
        try await channels[1].send([UInt8](repeating: 1, count: 100))
        try await vc.waitForL2CAP(channelID: 0x0051, count: 2)
        let frames = vc.l2capReceived.filter { $0.channelID == 0x0051 }.map(\.payload.count)
        #expect(frames == [64, 38])
        #expect(await channels[0].peerMPS == 80)
    }

    @Test func channelsOpenedAsLECannotBeReconfigured() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080) }
        let request = try await Self.signaling(vc, code: 0x14)
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .leCreditBasedConnectionResponse(
            destinationCID: 0x0050, mtu: 100, mps: 64, initialCredits: 1, result: 0)))
        let channel = try await task.value
        await #expect(throws: L2CAPChannelError.notEnhanced(cid: 0x0040)) { try await channel.reconfigure(mtu: 4096) }
        // Nor by the peer: its CID is not an enhanced channel's (0x0003).
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 9, body: .creditBasedReconfigureRequest(mtu: 512, mps: 64, destinationCIDs: [0x0050])))
        #expect(try await Self.signaling(vc, code: 0x1A) == [0x1A, 9, 0x02, 0x00, 0x03, 0x00])
    }
}
