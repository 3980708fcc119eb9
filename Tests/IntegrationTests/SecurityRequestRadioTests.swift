import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// A peripheral that asks for security itself: Bumble's "requester" peer
/// (Fixtures/peers/scenarios/security-extras.json) sends a Security Request (Vol 3, Part H,
/// 3.6.7) with Bonding, MITM and SC set on the central's first ATT request after Exchange MTU; it shows
/// passkey 123456 (Display Only).
@Suite(.serialized) struct SecurityRequestRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var open: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00003-0000-1000-8000-00805F9B34FB", service: service) }
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }

    /// `acceptSecurityRequests` pairs at the level the request asks for (MITM + SC: Secure
    /// Connections with Passkey Entry, typed here) and the link's level event follows.
    @Test(.timeLimit(.minutes(1)))
    func thePeersSecurityRequestStartsPairingWithTheAgent() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("requester"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            var events = await link.events().makeAsyncIterator()
            let store = MemoryBondStore()
            var options = PairingOptions()
            options.ioCapability = .keyboardOnly
            let agent = RecordingAgent(passkey: 123_456)
            try await link.acceptSecurityRequests(options: options, agent: agent, store: store)

            // The first read makes the peer ask; the read itself is answered.
            let peripheral = try await Peripheral(connection: link)
            #expect(try await peripheral.read(open) == Array("open".utf8))
            #expect(await events.nextLifecycle() == .securityChanged(.secureConnections))
            #expect(agent.asked.withLock { $0 } == 1)
            #expect(await link.securityLevel == .secureConnections)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }
}
