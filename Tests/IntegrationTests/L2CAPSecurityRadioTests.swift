import Testing
import BLETestSupport
import SMP
import BLEWire
import BLECore

/// LE and enhanced credit-based channels to Bumble servers that need security (scenario
/// "l2cap-security", Fixtures/peers/l2cap_servers.py "security"): PSM 0x0090 refuses a plain
/// link with 0x0008 (insufficient encryption), PSM 0x0091 a link without a MITM-protected key
/// with 0x0005 (insufficient authentication), PSM 0x0092 a plain link with 0x0007. The peer
/// pairs as Display YesNo with MITM and Secure Connections.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct L2CAPSecurityRadioTests {
    static func withLink(_ body: (Connection, VirtualRadio) async throws -> Void) async throws {
        try await VirtualRadio.with(scenario: "l2cap-security") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("secure"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            do {
                try await body(link, radio)
            } catch {
                print(radio.recentLog)
                throw error
            }
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"), "\(radio.recentLog)")
            await central.close()
        }
    }

    static func echoOnce(_ channel: CreditBasedChannel) async throws {
        let sdu = Array("secret over PSM \(channel.psm)".utf8)
        try await channel.send(sdu, timeout: .seconds(10))
        #expect(try await channel.receive(timeout: .seconds(10)) == sdu)
    }

    /// A plain link refused with 0x0008: the connection's raiser pairs Just Works and the
    /// request goes again, once; the channel echoes on the encrypted link.
    @Test func insufficientEncryptionPairsAndOpens() async throws {
        try await Self.withLink { link, radio in
            await link.setSecurityRaiser(link.securityRaiser(store: MemoryBondStore()))
            let channel = try await link.openL2CAPChannel(psm: 0x0090)
            #expect(await link.securityLevel == .encrypted)
            #expect(radio.recentLog.contains("PSM 0x0090 needs encrypted, the link is none: refused with result 0x0008"), "\(radio.recentLog)")
            try await Self.echoOnce(channel)
            // An enhanced request on the encrypted link is accepted at once.
            let channels = try await link.openL2CAPChannels(psm: 0x0090, count: 2)
            #expect(channels.count == 2)
            try await Self.echoOnce(channels[1])
        }
    }

    /// The same with an enhanced request: refused for all channels with 0x0008, paired, asked
    /// again, and both channels echo.
    @Test func enhancedRequestRefusedForEncryptionPairsAndOpens() async throws {
        try await Self.withLink { link, radio in
            await link.setSecurityRaiser(link.securityRaiser(store: MemoryBondStore()))
            let channels = try await link.openL2CAPChannels(psm: 0x0090, count: 2)
            #expect(channels.count == 2 && channels.allSatisfy(\.isEnhanced))
            #expect(await link.securityLevel == .encrypted)
            #expect(radio.recentLog.components(separatedBy: "PSM 0x0090 needs encrypted, the link is none: refused with result 0x0008").count == 2, "\(radio.recentLog)")
            for channel in channels { try await Self.echoOnce(channel) }
        }
    }

    /// Without a raiser the refusal says pairing is needed, naming the peer and the PSM.
    @Test func withoutARaiserTheRefusalNamesPeerAndPSM() async throws {
        try await Self.withLink { link, _ in
            let peer = "\(link.peer.address)"
            await #expect(throws: L2CAPChannelError.securityNeeded(peer: peer, psm: 0x0091, needed: .encrypted, refusal: .insufficientAuthentication, reason: nil)) {
                try await link.openL2CAPChannel(psm: 0x0091)
            }
            await #expect(throws: L2CAPChannelError.securityNeeded(peer: peer, psm: 0x0092, needed: .encrypted, refusal: .insufficientEncryptionKeySize, reason: nil)) {
                try await link.openL2CAPChannels(psm: 0x0092, count: 3)
            }
            #expect(await link.securityLevel == SecurityLevel.none)
        }
    }

    /// `security: .authenticated` with an agent that compares numbers: pairing with MITM
    /// protection runs before the request, which the peer accepts at once.
    @Test func authenticatedChannelWithNumericComparison() async throws {
        try await Self.withLink { link, radio in
            var options = PairingOptions()
            options.ioCapability = .displayYesNo
            let agent = RecordingAgent(passkey: nil)
            await link.setSecurityRaiser(link.securityRaiser(options: options, agent: agent, store: MemoryBondStore()))
            let channel = try await link.openL2CAPChannel(psm: 0x0091, security: .authenticated)
            #expect(await link.securityLevel >= .authenticated)
            #expect(agent.compared.withLock { $0 } != nil)
            #expect(!radio.recentLog.contains("refused with result"), "\(radio.recentLog)")
            try await Self.echoOnce(channel)
        }
    }

    /// Just Works cannot give the MITM-protected key PSM 0x0091 needs: after pairing, the
    /// second request is refused again and that refusal is thrown (one retry, no loop).
    @Test func justWorksCannotOpenAnAuthenticatedChannel() async throws {
        try await Self.withLink { link, radio in
            await link.setSecurityRaiser(link.securityRaiser(store: MemoryBondStore()))
            await #expect(throws: L2CAPChannelError.refused(peer: "\(link.peer.address)", psm: 0x0091, result: .insufficientAuthentication)) {
                try await link.openL2CAPChannel(psm: 0x0091)
            }
            #expect(await link.securityLevel == .encrypted)
            #expect(radio.recentLog.components(separatedBy: "PSM 0x0091 needs authenticated").count == 3, "\(radio.recentLog)")
        }
    }
}
