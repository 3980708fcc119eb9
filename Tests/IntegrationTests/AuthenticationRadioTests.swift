import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// A characteristic that needs a MITM-protected key (security mode 1 level 3, Vol 3, Part C,
/// 10.2.1 and 10.3.1): 5EC00006 of Bumble's "numeric" peer (Display YesNo, MITM, Secure
/// Connections; Fixtures/peers/scenarios/security.json), which refuses a read with
/// Insufficient Authentication (0x05) on a plain link and on a link encrypted with a Just
/// Works key.
@Suite(.serialized) struct AuthenticationRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var authenticated: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00006-0000-1000-8000-00805F9B34FB", service: service) }

    func open(_ radio: VirtualRadio) async throws -> (Central, Connection, Peripheral) {
        let central = try await Central.open(radio.transportSpec)
        let device = try #require(radio.device("numeric"))
        let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
        return (central, link, try await Peripheral(connection: link))
    }

    /// The refused read raises security with an agent that can compare numbers: pairing
    /// (Numeric Comparison) runs once, the read is retried once and gets the value.
    @Test(.timeLimit(.minutes(1)))
    func aRefusedReadPairsWithMITMProtectionAndRetries() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio)
            var events = await link.events().makeAsyncIterator()
            let store = MemoryBondStore()
            var options = PairingOptions()
            options.ioCapability = .displayYesNo
            let agent = RecordingAgent(passkey: nil)
            await peripheral.setSecurityRaiser(link.securityRaiser(options: options, agent: agent, store: store))

            #expect(try await peripheral.read(authenticated) == Array("authenticated".utf8))
            // One pairing, with the six digits of Numeric Comparison (2.3.5.6.2) compared here.
            let compared = try #require(agent.compared.withLock { $0 })
            #expect(compared <= 999_999)
            #expect(await link.securityLevel == .secureConnections)
            #expect(await events.nextLifecycle() == .securityChanged(.secureConnections))
            let ltk = try #require(store.bond(for: link.peer)?.longTermKey)
            #expect(ltk.authenticated && ltk.secureConnections)
            await central.close()
        }
    }

    /// With only Just Works (no IO here), pairing gives an unauthenticated key: the retried
    /// read is refused again, and the error names the code, the handle and the peer.
    @Test(.timeLimit(.minutes(1)))
    func justWorksCannotReachAnAuthenticatedCharacteristic() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio)
            let store = MemoryBondStore()
            await peripheral.setSecurityRaiser(link.securityRaiser(store: store))
            let characteristic = try #require(try await peripheral.characteristics(of: service).first { $0.uuid == authenticated.uuid })

            do throws(GATTError) {
                _ = try await peripheral.read(authenticated)
                Issue.record("a Just Works key read a characteristic that needs authentication")
            } catch {
                #expect(error.attErrorCode == .insufficientAuthentication)
                #expect(error.operation == .reading)
                #expect(error.target?.handle == characteristic.valueHandle)
                #expect(error.peer == link.peer.address)
                let hex = String(characteristic.valueHandle, radix: 16, uppercase: true)
                let text = "\(error)"
                #expect(text.hasPrefix("Insufficient Authentication (0x05) reading "), "\(text)")
                #expect(text.contains(" at handle 0x\(String(repeating: "0", count: 4 - hex.count))\(hex) on F0:5E:C0:00:00:03"), "\(text)")
            }
            // Pairing did run (Just Works): the link is encrypted, not authenticated.
            #expect(await link.securityLevel == .encrypted)
            #expect(store.bond(for: link.peer)?.longTermKey?.authenticated == false)
            await central.close()
        }
    }
}
