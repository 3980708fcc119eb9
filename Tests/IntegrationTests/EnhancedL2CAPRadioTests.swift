import Testing
import BLECore
import BLETestSupport

/// Enhanced credit-based channels (Core Spec 5.4 Vol 3, Part A, 4.25-4.28) against Bumble's
/// L2CAP (scenario "l2cap", Fixtures/peers/l2cap_servers.py): its servers accept the enhanced
/// request on the same PSMs as LE ones, with their strict receive side; its client opens
/// enhanced channels back to us; the test peer adds the Reconfigure Request Bumble lacks.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EnhancedL2CAPRadioTests {
    @Test func fiveChannelsInOneRequestEchoAtOnce() async throws {
        try await L2CAPRadioTests.withLink { link in
            // Five, the most one request may carry (4.25).
            let channels = try await link.openL2CAPChannels(psm: 0x0080, count: 5, mtu: 8192)
            #expect(channels.count == 5)
            #expect(Set(channels.map(\.localCID)).count == 5)
            // 96, 80, 64, 32 and 16 KiB at once, each through its own channel.
            let data = [96, 80, 64, 32, 16].map { ChannelEcho.random($0 * 1024) }
            try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                for (i, channel) in channels.enumerated() {
                    let bytes = data[i]
                    group.addTask { (i, try await ChannelEcho.sdus(channel, bytes, sduSize: 4000)) }
                }
                for try await (i, back) in group {
                    #expect(SHA256.hash(back) == SHA256.hash(data[i]), "channel \(i)")
                }
            }
            for channel in channels { await channel.close() }
        }
    }

    @Test func refusedPSM() async throws {
        try await L2CAPRadioTests.withLink { link in
            await #expect(throws: L2CAPChannelError.refused(peer: "\(link.peer.address)", psm: 0x0099, result: .psmNotSupported)) {
                try await link.openL2CAPChannels(psm: 0x0099, count: 2)
            }
        }
    }

    @Test func peerOpensFiveChannelsToUs() async throws {
        try await L2CAPRadioTests.withLink { link in
            let incoming = try await link.acceptL2CAPChannels(psm: 0x0085, mtu: 2048)
            // The "dial" server opens five enhanced channels (one request) back to PSM 0x0085 when asked.
            let dial = try await link.openL2CAPChannel(psm: 0x0084)
            try await dial.send([1])
            var accepted: [CreditBasedChannel] = []
            for await channel in incoming {
                accepted.append(channel)
                if accepted.count == 5 { break }
            }
            #expect(try await dial.receive(timeout: .seconds(10)) == Array("opened 5".utf8))
            #expect(accepted.map(\.isEnhanced) == [true, true, true, true, true])
            for (i, channel) in accepted.enumerated() {
                #expect(await channel.peerMTU == 1024)
                #expect(await channel.peerMPS == 100)
                #expect(try await channel.receive(timeout: .seconds(10)) == Array("ecfc \(i)".utf8))
                let data = ChannelEcho.random(20_000)
                let back = try await ChannelEcho.sdus(channel, data, sduSize: 1000)
                #expect(SHA256.hash(back) == SHA256.hash(data), "channel \(i)")
            }
        }
    }

    @Test func reconfigureRaisesTheMTU() async throws {
        try await L2CAPRadioTests.withLink { link in
            let channels = try await link.openL2CAPChannels(psm: 0x0080, count: 2, mtu: 1024)
            // Before the reconfiguration a 4000-byte echo would exceed this side's MTU of 1024
            // (and close the channel); after it, both channels carry such SDUs.
            try await link.reconfigureL2CAPChannels(channels, mtu: 4096)
            for channel in channels {
                #expect(await channel.mtu == 4096)
                let data = ChannelEcho.random(16_000)
                let back = try await ChannelEcho.sdus(channel, data, sduSize: 4000)
                #expect(SHA256.hash(back) == SHA256.hash(data))
            }
            // A smaller MTU is refused here, before asking (4.27: the MTU only grows).
            await #expect(throws: L2CAPChannelError.reconfigurationRefused(peer: "\(link.peer.address)", result: .mtuReductionNotAllowed)) {
                try await channels[0].reconfigure(mtu: 2048)
            }
        }
    }
}
