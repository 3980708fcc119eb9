import Testing
import BLECore
import BLETestSupport

/// LE credit-based channels against Bumble's servers with a strict receive side
/// (Fixtures/peers/l2cap_servers.py, scenario "l2cap"): the peer closes the channel on any
/// K-frame over its MPS or sent without a credit, so a passing transfer shows flow control.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct L2CAPRadioTests {
    static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

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

    /// Sends `data` in SDUs of `sduSize` while reading the echo; returns what came back.
    static func echo(_ channel: CreditBasedChannel, _ data: [UInt8], sduSize: Int) async throws -> [UInt8] {
        async let sending: Void = {
            var offset = 0
            while offset < data.count {
                let end = min(offset + sduSize, data.count)
                try await channel.send(Array(data[offset..<end]), timeout: .seconds(30))
                offset = end
            }
        }()
        var back: [UInt8] = []
        back.reserveCapacity(data.count)
        while back.count < data.count, let sdu = try await channel.receive(timeout: .seconds(30)) { back += sdu }
        try await sending
        return back
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
            let data = Self.random(1 << 20)
            let back = try await Self.echo(channel, data, sduSize: 8192)
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
            let data = Self.random(2 * 65535)
            let back = try await Self.echo(channel, data, sduSize: 65535)
            #expect(SHA256.hash(back) == SHA256.hash(data))
        }
    }

    @Test func peerGrantingOneCreditAtATime() async throws {
        try await Self.withLink { link in
            let channel = try await link.openL2CAPChannel(psm: 0x0082, mtu: 2048)
            let data = Self.random(20 * 1000)
            let back = try await Self.echo(channel, data, sduSize: 1000)
            let same = back == data
            #expect(same, "the echo differs from what was sent")
            #expect(await channel.creditStalls > 0)
        }
    }

    @Test func peerThatStopsGrantingTimesOutTheSend() async throws {
        try await Self.withLink { link in
            let channel = try await link.openL2CAPChannel(psm: 0x0083, mtu: 2048)
            // Two initial credits: 150 bytes take 100 + 52 octet K-frames, then none are left.
            try await channel.send(Self.random(150), timeout: .seconds(5))
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
            let a = Self.random(64 * 1024), b = Self.random(48 * 1024)
            async let backA = Self.echo(first, a, sduSize: 4096)
            async let backB = Self.echo(second, b, sduSize: 1500)
            let (ra, rb) = try await (backA, backB)
            #expect(SHA256.hash(ra) == SHA256.hash(a))
            #expect(SHA256.hash(rb) == SHA256.hash(b))
        }
    }
}
