import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// The central as a private device against Bumble's Security Manager (an independent
/// implementation): it pairs from a resolvable private address made from its local IRK and
/// gives the peer that IRK and its identity address (Vol 3, Part H, 3.6.4, 3.6.5); on a later
/// link from a new resolvable private address the peer resolves it to the identity, finds the
/// bond and encrypts with its LTK, without pairing again.
@Suite(.serialized) struct PrivacyRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }
    /// The IRK of the ah example, Vol 3, Part H, Appendix D.7.
    static let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B

    @Test(.timeLimit(.minutes(1)))
    func thePeerResolvesANewPrivateAddressWithTheDistributedIRK() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let central = try await Central.open(radio.transportSpec)
            let adapter = try #require(await central.controllerInfo?.address)
            let store = MemoryBondStore()
            try await central.setOwnAddress(.resolvablePrivate(irk: Self.irk))
            let first = try #require(await central.currentRandomAddress)
            #expect(ResolvablePrivateAddress.resolves(LEAddress(first, type: .random), irk: Self.irk))

            let link = try await central.connect(peer, timeout: .seconds(10))
            var options = PairingOptions()
            options.initiatorKeys = [.identityKey]
            options.localIdentity = LocalIdentity(irk: Self.irk, address: LEAddress(adapter, type: .public))
            _ = try await link.pair(options: options, store: store)
            // A request answered on the encrypted link: the peer has taken the keys.
            #expect(try await Peripheral(connection: link).read(encrypted) == Array("encrypted".utf8))
            try await link.disconnect()

            // A new resolvable private address from the same IRK.
            try await central.setOwnAddress(.resolvablePrivate(irk: Self.irk))
            let second = try #require(await central.currentRandomAddress)
            #expect(second != first)
            let again = try await central.connect(peer, timeout: .seconds(10))
            let agent = CountingAgent()
            try await again.requireSecurity(.encrypted, agent: agent, store: store)
            #expect(agent.asked.withLock { $0 } == 0, "paired again: the peer did not resolve \(second)")
            #expect(await again.securityLevel == .encrypted)
            #expect(try await Peripheral(connection: again).read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }
}
