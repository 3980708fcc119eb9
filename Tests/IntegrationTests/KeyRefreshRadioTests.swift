import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Encrypting a link that is encrypted already (Vol 4, Part E, 7.8.24: the controller pauses
/// encryption and starts it with the new key; Vol 6, Part B, 5.1.3.2), against Bumble's
/// "numeric" peer (Fixtures/peers/scenarios/security.json). Bumble's controller reports the
/// outcome with Encryption Change rather than Encryption Key Refresh Complete; the stack
/// takes either.
@Suite(.serialized) struct KeyRefreshRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }
    var authenticated: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00006-0000-1000-8000-00805F9B34FB", service: service) }

    /// Just Works first; the same bond key again keeps the level (no event); then pairing
    /// with MITM protection on the encrypted link refreshes the key and raises the level, and
    /// the characteristic that needs authentication opens.
    @Test(.timeLimit(.minutes(1)))
    func reEncryptingAnEncryptedLinkRefreshesTheKeyAndRaisesTheLevel() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("numeric"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            let peripheral = try await Peripheral(connection: link)
            var events = await link.events().makeAsyncIterator()
            let store = MemoryBondStore()

            let first = try await link.pair(store: store)
            let justWorks = try #require(first.longTermKey)
            #expect(!justWorks.authenticated)
            #expect(await events.nextLifecycle() == .securityChanged(.encrypted))

            // The bond's key again, on the encrypted link: the peer finds the same key, the
            // link stays up and at its level.
            try await link.startEncryption(longTermKey: justWorks.key, ediv: justWorks.ediv, rand: justWorks.rand, level: justWorks.level)
            #expect(await link.securityLevel == .encrypted)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))

            // The stored key is not good enough for .authenticated: pair with Numeric
            // Comparison on the encrypted link, which encrypts it with the new key.
            var options = PairingOptions()
            options.ioCapability = .displayYesNo
            let agent = RecordingAgent(passkey: nil)
            try await link.requireSecurity(.authenticated, options: options, agent: agent, store: store)
            #expect(agent.compared.withLock { $0 } != nil)
            // The next level event is the raise: the refresh with the same key sent none.
            #expect(await events.nextLifecycle() == .securityChanged(.secureConnections))
            #expect(await link.securityLevel == .secureConnections)
            let refreshed = try #require(store.bond(for: link.peer)?.longTermKey)
            #expect(refreshed.authenticated && refreshed.key != justWorks.key)
            // The peer sees the new, MITM-protected key on the link.
            #expect(try await peripheral.read(authenticated) == Array("authenticated".utf8))
            await central.close()
        }
    }
}
