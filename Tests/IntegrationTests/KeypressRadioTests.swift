import Testing
import Synchronization
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Pairing Keypress Notifications (Vol 3, Part H, 3.5.8) with Bumble's "keypress" peer
/// (Fixtures/peers/scenarios/security-extras.json): Keyboard Display, MITM, Keypress set in AuthReq.
@Suite(.serialized) struct KeypressRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var keypressLog: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00005-0000-1000-8000-00805F9B34FB", service: service) }

    /// Types the peer's passkey one digit at a time, reporting each keypress.
    struct Typist: PairingAgent {
        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
        func confirmJustWorks(peer: LEAddress) async -> Bool { true }
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
            await keypresses.notify(.passkeyEntryStarted)
            for _ in 0..<6 { await keypresses.notify(.passkeyDigitEntered) }
            await keypresses.notify(.passkeyEntryCompleted)
            return 123_456
        }
    }

    /// Keeps the peer's keypresses.
    final class Watcher: PairingAgent {
        let seen = Mutex<[UInt8]>([])
        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { nil }
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
        func confirmJustWorks(peer: LEAddress) async -> Bool { true }
        func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress) { seen.withLock { $0.append(notification.rawValue) } }
    }

    func open(_ radio: VirtualRadio) async throws -> (Central, Connection) {
        let central = try await Central.open(radio.transportSpec)
        let device = try #require(radio.device("keypress"))
        return (central, try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10)))
    }

    @Test(.timeLimit(.minutes(1)))
    func typingHereReachesThePeer() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link) = try await open(radio)
            var options = PairingOptions()
            options.ioCapability = .keyboardOnly
            options.mitm = true
            options.keypressNotifications = true
            let bond = try await link.pair(options: options, agent: Typist())
            #expect(bond.longTermKey?.level == .secureConnections)
            // The peer lists what it received: started, six digits entered, completed.
            let peripheral = try await Peripheral(connection: link)
            #expect(try await peripheral.read(keypressLog) == [0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x04])
            await central.close()
        }
    }

    /// The peer types the six digits it knows, not the ones shown here: its keypresses
    /// arrive all the same, then the passkey check fails.
    @Test(.timeLimit(.minutes(1)))
    func thePeersTypingReachesTheAgent() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link) = try await open(radio)
            var options = PairingOptions()
            options.ioCapability = .displayOnly
            options.mitm = true
            options.keypressNotifications = true
            let agent = Watcher()
            do throws(PairingError) {
                _ = try await link.pair(options: options, agent: agent)
            } catch {
                #expect(error.reason == .confirmValueFailed, "\(error)")
            }
            #expect(agent.seen.withLock { $0 } == [0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x04])
            await central.close()
        }
    }
}
