import Testing
import BLETestSupport
import SMP
import BLEWire
import BLECore

/// A Bumble peer opening a channel to this side's server that needs security (scenario
/// "l2cap-accept-security", Fixtures/peers/l2cap_servers.py "l2capConnect" with
/// "pairWhenRefused"): the request on the plain link is refused with 0x0008 (Core Spec 5.4
/// Vol 3, Part A, 4.23), the peer sends a Security Request, this side pairs Just Works
/// (`acceptSecurityRequests`), and the peer's next request is accepted.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct L2CAPAcceptSecurityRadioTests {
    @Test func peerRefusedForEncryptionPairsAndOpensTheChannel() async throws {
        try await VirtualRadio.with(scenario: "l2cap-accept-security") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("asker"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            // Before the server: the peer's Security Request may follow its first refusal at once.
            try await link.acceptSecurityRequests(store: MemoryBondStore())
            let incoming = try await link.acceptL2CAPChannels(psm: 0x0095, security: .encrypted, minimumKeySize: 16)
            let accepting = Task { () throws -> CreditBasedChannel? in
                var iterator = incoming.makeAsyncIterator()
                return await iterator.next()
            }
            do {
                let channel = try #require(try await value(of: accepting, within: 40), "the link ended before the peer opened a channel")
                #expect(await link.securityLevel == .encrypted)
                #expect(await link.encryptionKeySize == 16)
                #expect(try await channel.receive(timeout: .seconds(10)) == Array("hello over an encrypted link\n".utf8))
                let sdu = Array("echo this".utf8)
                try await channel.send(sdu, timeout: .seconds(10))
                #expect(try await channel.receive(timeout: .seconds(10)) == sdu)
                // Refused once on the plain link, then open on the encrypted one.
                let log = radio.recentLog
                #expect(log.components(separatedBy: "channel to PSM 0x0095 refused with result 0x0008").count == 2, "\(log)")
                #expect(log.contains("channel to PSM 0x0095 open (link encrypted)"), "\(log)")
            } catch {
                print(radio.recentLog)
                throw error
            }
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"), "\(radio.recentLog)")
            await central.close()
        }
    }
}
