import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// LE credit-based channels against Bumble's servers with a strict receive side
/// (Fixtures/peers/l2cap_servers.py, scenario "l2cap"): the peer closes the channel on any
/// K-frame over its MPS or sent without a credit, so a passing transfer shows flow control.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct L2CAPRadioTests {
    static func withLink(_ body: (Connection) async throws -> Void) async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("coc"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let link = try await central.connect(peer, timeout: .seconds(10))
            do {
                try await body(link)
            } catch {
                print(radio.recentLog)
                throw error
            }
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"), "\(radio.recentLog)")
            try? await link.disconnect()
            await central.close()
        }
    }

    @Test func sha256OfKnownVector() {
        // FIPS 180-4 example "abc".
        #expect(SHA256.hash(Array("abc".utf8)) == [
            0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
            0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad])
    }

    @Test func oneMebibyteThroughTheEchoServer() async throws {
        try await Self.withLink { link in
            let channel = try await link.openL2CAPChannel(psm: 0x0080, mtu: 65535)
            let data = ChannelEcho.random(1 << 20)
            let back = try await ChannelEcho.sdus(channel, data, sduSize: 8192)
            #expect(back.count == data.count)
            #expect(SHA256.hash(back) == SHA256.hash(data))
            #expect(await channel.isOpen)
            await channel.close()
        }
    }

    @Test func smallMPSWith64KiBSDUs() async throws {
        try await Self.withLink { link in
            // The peer announces MPS 23; this side asks for 23 too: 2850 K-frames per SDU each way.
            let channel = try await link.openL2CAPChannel(psm: 0x0081, mtu: 65535, mps: 23, credits: 64)
            #expect(await channel.peerMPS == 23)
            let data = ChannelEcho.random(2 * 65535)
            let back = try await ChannelEcho.sdus(channel, data, sduSize: 65535)
            #expect(SHA256.hash(back) == SHA256.hash(data))
        }
    }

    @Test func peerGrantingOneCreditAtATime() async throws {
        try await Self.withLink { link in
            let channel = try await link.openL2CAPChannel(psm: 0x0082, mtu: 2048)
            let data = ChannelEcho.random(20 * 1000)
            let back = try await ChannelEcho.sdus(channel, data, sduSize: 1000)
            let same = back == data
            #expect(same, "the echo differs from what was sent")
            #expect(await channel.creditStalls > 0)
        }
    }

    @Test func peerThatStopsGrantingTimesOutTheSend() async throws {
        try await Self.withLink { link in
            let channel = try await link.openL2CAPChannel(psm: 0x0083, mtu: 2048)
            // Two initial credits: 150 bytes take 100 + 52 octet K-frames, then none are left.
            try await channel.send(ChannelEcho.random(150), timeout: .seconds(5))
            await #expect(throws: L2CAPChannelError.creditTimeout(peer: "\(link.peer.address)", cid: channel.localCID, after: .seconds(1))) {
                try await channel.send([1, 2, 3], timeout: .seconds(1))
            }
        }
    }

    @Test func refusedPSM() async throws {
        try await Self.withLink { link in
            await #expect(throws: L2CAPChannelError.refused(peer: "\(link.peer.address)", psm: 0x0099, result: .psmNotSupported)) {
                try await link.openL2CAPChannel(psm: 0x0099)
            }
        }
    }

    @Test func twoChannelsOnOneLink() async throws {
        try await Self.withLink { link in
            let first = try await link.openL2CAPChannel(psm: 0x0080, mtu: 4096)
            let second = try await link.openL2CAPChannel(psm: 0x0081, mtu: 4096)
            #expect(first.localCID != second.localCID)
            let a = ChannelEcho.random(64 * 1024), b = ChannelEcho.random(48 * 1024)
            async let backA = ChannelEcho.sdus(first, a, sduSize: 4096)
            async let backB = ChannelEcho.sdus(second, b, sduSize: 1500)
            let (ra, rb) = try await (backA, backB)
            #expect(SHA256.hash(ra) == SHA256.hash(a))
            #expect(SHA256.hash(rb) == SHA256.hash(b))
        }
    }

    // MARK: - The link ends in the middle of an SDU

    @Test func droppingTheLinkMidSDUFailsThePendingSendAndReceiveAtOnce() async throws {
        try await Self.withLink { link in
            // PSM 0x0083 grants 2 credits and no more. MPS 100: a 1000-byte SDU is 11 K-frames;
            // 2 go out, then the send waits for credits halfway through.
            let channel = try await link.openL2CAPChannel(psm: 0x0083, mtu: 2048)
            let sending = Task { try await channel.send(ChannelEcho.random(1000), timeout: .seconds(60)) }
            let receiving = Task { try await channel.receive() }
            try await channel.senders.waitForCount("the send waiting for credits") { $0 == 1 }
            try await channel.receivers.waitForCount("the receive waiting") { $0 == 1 }
            #expect(await channel.sendCredits == 0)
            try await link.disconnect()
            let expected = L2CAPChannelError.link(.disconnected(peer: link.peer.address, reason: .remoteUserTerminatedConnection))
            let sent = try #require(await outcome(of: sending, within: 5), "the send still waits after the link ended")
            let received = try #require(await outcome(of: receiving, within: 5), "the receive still waits after the link ended")
            #expect(throws: expected) { try sent.get() }
            #expect(throws: expected) { try received.get() }
            #expect(!(await channel.isOpen))
            await #expect(throws: expected) { try await channel.send([1]) }
        }
    }

    @Test func peerEndingTheLinkHalfwayThroughOurSDU() async throws {
        try await Self.withLink { link in
            // The peer grants 3 credits and ends the link when the third K-frame arrives.
            let channel = try await link.openL2CAPChannel(psm: 0x0086, mtu: 2048)
            let receiving = Task { try await channel.receive() }
            let sending = Task { try await channel.send(ChannelEcho.random(1000), timeout: .seconds(60)) }
            let expected = L2CAPChannelError.link(.disconnected(peer: link.peer.address, reason: .remoteUserTerminatedConnection))
            let sent = try #require(await outcome(of: sending, within: 10), "the send still waits after the link ended")
            let received = try #require(await outcome(of: receiving, within: 5), "the receive still waits after the link ended")
            #expect(throws: expected) { try sent.get() }
            #expect(throws: expected) { try received.get() }
            #expect(await channel.bytesSent == 0)
            #expect(!(await link.isConnected))
        }
    }

    @Test func peerEndingTheLinkHalfwayThroughItsSDU() async throws {
        try await Self.withLink { link in
            // Our first SDU makes the peer send 3 K-frames of a 1000-byte SDU (MPS 100) and end the link.
            let channel = try await link.openL2CAPChannel(psm: 0x0087, mtu: 2048, mps: 100)
            let receiving = Task { try await channel.receive() }
            try await channel.send([1])
            let expected = L2CAPChannelError.link(.disconnected(peer: link.peer.address, reason: .remoteUserTerminatedConnection))
            let received = try #require(await outcome(of: receiving, within: 10), "the receive still waits after the link ended")
            #expect(throws: expected) { try received.get() }
            #expect(await channel.framesReceived == 3)
            #expect(await channel.bytesReceived == 0)
        }
    }

    // MARK: - Cancelling a send that waits for credits

    @Test func cancellingASendThatWaitsForCreditsWithAOneCreditPeer() async throws {
        try await Self.withLink { link in
            // PSM 0x0082 starts with one credit and grants one per K-frame taken: the first
            // K-frame of a 2000-byte SDU (21 at MPS 100) goes out, then the send waits.
            let channel = try await link.openL2CAPChannel(psm: 0x0082, mtu: 2048)
            let sdu = ChannelEcho.random(2000)
            let sending = Task { try await channel.send(sdu, timeout: .seconds(60)) }
            try await channel.senders.waitForCount("the send waiting for credits") { $0 == 1 }
            sending.cancel()
            let result = try #require(await outcome(of: sending, within: 5), "the cancelled send still waits")
            #expect(throws: L2CAPChannelError.cancelled(peer: "\(link.peer.address)", cid: channel.localCID)) { try result.get() }
            // Documented: a started SDU is finished when credits come, so the peer never sees
            // half of it (the strict peer would log a violation); the channel stays usable.
            #expect(await channel.isOpen)
            #expect(try await channel.receive(timeout: .seconds(30)) == sdu)
            let next = ChannelEcho.random(1500)
            #expect(try await ChannelEcho.sdus(channel, next, sduSize: 1500) == next)
        }
    }

    @Test func cancellingASendNotStartedDropsItsSDU() async throws {
        try await Self.withLink { link in
            // PSM 0x0083 grants 2 credits and never more: 150 bytes take both; the next SDU
            // cannot start, and cancelling its send takes it out of the queue.
            let channel = try await link.openL2CAPChannel(psm: 0x0083, mtu: 2048)
            try await channel.send(ChannelEcho.random(150), timeout: .seconds(5))
            let sending = Task { try await channel.send([1, 2, 3], timeout: .seconds(60)) }
            try await channel.senders.waitForCount("the send waiting for credits") { $0 == 1 }
            sending.cancel()
            let result = try #require(await outcome(of: sending, within: 5), "the cancelled send still waits")
            #expect(throws: L2CAPChannelError.cancelled(peer: "\(link.peer.address)", cid: channel.localCID)) { try result.get() }
            #expect(await channel.bytesSent == 150)
            #expect(await channel.isOpen)
            await channel.close()
            #expect(!(await channel.isOpen))
        }
    }

    // MARK: - Channels on several links

    @Test func channelsOnTwoLinksEchoAtOnce() async throws {
        try await VirtualRadio.with(scenario: "l2cap-links") { radio in
            let central = try await Central.open(radio.transportSpec)
            var links: [Connection] = []
            for id in ["echo-1", "echo-2"] {
                let device = try #require(radio.device(id))
                let peer = try #require(LEAddress(device.address, type: .random))
                links.append(try await central.connect(peer, timeout: .seconds(10)))
            }
            let handles = [await links[0].handle, await links[1].handle]
            #expect(handles[0] != handles[1])
            let channels = [try await links[0].openL2CAPChannel(psm: 0x0080, mtu: 8192),
                            try await links[1].openL2CAPChannel(psm: 0x0080, mtu: 8192)]
            let data = [ChannelEcho.random(96 * 1024), ChannelEcho.random(64 * 1024)]
            try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                for i in 0..<2 {
                    let channel = channels[i], bytes = data[i]
                    group.addTask { (i, try await ChannelEcho.sdus(channel, bytes, sduSize: 3000)) }
                }
                for try await (i, back) in group {
                    #expect(back.count == data[i].count, "link \(i)")
                    #expect(SHA256.hash(back) == SHA256.hash(data[i]), "link \(i)")
                }
            }
            for i in 0..<2 {
                #expect(await channels[i].bytesSent == data[i].count)
                #expect(await channels[i].bytesReceived == data[i].count)
            }
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"), "\(radio.recentLog)")
            for link in links { try? await link.disconnect() }
            await central.close()
        }
    }

    // MARK: - Byte stream

    @Test func byteStreamThroughTheEchoServer() async throws {
        try await Self.withLink { link in
            // The writer cuts 300 000 bytes into SDUs of the peer's MTU (65535); the echo
            // comes back in SDUs of at most this side's MTU (4096), read in 1000-byte chunks.
            let channel = try await link.openL2CAPChannel(psm: 0x0080, mtu: 4096)
            let data = ChannelEcho.random(300_000)
            let back = try await ChannelEcho.bytes(channel, data, chunk: 1000)
            #expect(back.count == data.count)
            #expect(SHA256.hash(back) == SHA256.hash(data))
            #expect(await channel.bytesSent == data.count)
        }
    }
}
