import Testing
import Synchronization
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Passkey Entry where this side shows the six digits and the peer types them (Vol 3, Part H,
/// 2.3.5.6.3; Table 2.8, Display Only initiator with a Keyboard Only responder): Bumble's
/// "keyboard" peer (Fixtures/peers/scenarios/security-extras.json). The person who reads the
/// passkey here and types it there is the agent writing it to the peer's passkeyInput
/// characteristic 5EC00007 over the still unencrypted link.
@Suite(.serialized) struct PasskeyDisplayRadioTests {
    static let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: Self.service) }

    /// Shows the passkey: hands it to the person at the peer, who types it there.
    final class Display: PairingAgent {
        let peripheral: Peripheral
        let shown = Mutex<[UInt32]>([])
        let failure = Mutex<GATTError?>(nil)
        init(peripheral: Peripheral) { self.peripheral = peripheral }
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { nil }
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
        func confirmJustWorks(peer: LEAddress) async -> Bool { true }

        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {
            shown.withLock { $0.append(passkey) }
            let input = CharacteristicIdentifier(uuid: "5EC00007-0000-1000-8000-00805F9B34FB", service: PasskeyDisplayRadioTests.service)
            do throws(GATTError) { try await peripheral.write(passkey, to: input) } catch { failure.withLock { $0 = error } }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func thePeerTypesThePasskeyShownHere() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("keyboard"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
            let peripheral = try await Peripheral(connection: link)
            var events = await link.events().makeAsyncIterator()
            var options = PairingOptions()
            options.ioCapability = .displayOnly
            options.mitm = true
            let agent = Display(peripheral: peripheral)

            let bond = try await link.pair(options: options, agent: agent)
            #expect(agent.failure.withLock { $0 } == nil)
            // Shown once, six digits at most (2.3.5.6.3: a value in 0...999999).
            let shown = agent.shown.withLock { $0 }
            #expect(shown.count == 1 && shown.allSatisfy { $0 <= 999_999 })
            let ltk = try #require(bond.longTermKey)
            #expect(ltk.authenticated && ltk.secureConnections && ltk.keySize == 16)
            #expect(await link.securityLevel == .secureConnections)
            #expect(await events.nextLifecycle() == .securityChanged(.secureConnections))
            // Bumble's controller compares the LTKs both sides derived.
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }
}
