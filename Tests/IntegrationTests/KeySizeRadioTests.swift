import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Key sizes against Bumble's Security Manager (Fixtures/peers/scenarios/security-extras.json,
/// device "short-key": its Pairing Response says Maximum Encryption Key Size 7). This side
/// needs 16 octets by default, or the 16 an Encryption Key Size Too Short refusal asks for:
/// either way it ends pairing with Pairing Failed, Encryption Key Size (Vol 3, Part H, 2.3.4
/// and 3.5.5), and the link stays unencrypted.
@Suite(.serialized) struct KeySizeRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func aPeerThatAllowsOnlySevenOctetsIsRefused() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("short-key"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            do throws(PairingError) {
                try await link.pair()
                Issue.record("pairing with a 7-octet key went through")
            } catch {
                #expect(error.kind == .localFailed(.encryptionKeySize, detail: "the peer allows at most 7-octet keys, this side needs 16"))
            }
            // Options that would take 7 octets, asked for 16 (what Key Size Too Short asks).
            var options = PairingOptions()
            options.minimumKeySize = 7
            do throws(PairingError) {
                try await link.requireSecurity(.encrypted, keySize: 16, options: options)
                Issue.record("pairing with a 7-octet key went through")
            } catch {
                #expect(error.reason == .encryptionKeySize)
            }
            #expect(await link.securityLevel == .none)
            #expect(await link.encryptionKeySize == nil)
            await central.close()
        }
    }
}
