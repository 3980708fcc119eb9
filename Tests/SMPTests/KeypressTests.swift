import Testing
import Synchronization
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// Pairing Keypress Notifications (Vol 3, Part H, 3.5.8) in Passkey Entry, as PDUs on the
/// in-process virtual controller: they flow only when both Pairing Request and Pairing
/// Response set Keypress in AuthReq (3.5.1, Figure 3.3: bit 4).
@Suite(.timeLimit(.minutes(1)))
struct KeypressTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_79), type: .random)
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    /// A person typing 1, 2, erasing one digit, and confirming: started, entered, entered,
    /// erased, completed; then the passkey.
    final class Typist: PairingAgent {
        let enabled = Mutex<Bool?>(nil)
        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
        func confirmJustWorks(peer: LEAddress) async -> Bool { true }
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
            enabled.withLock { $0 = keypresses.isEnabled }
            for k in [KeypressNotificationType.passkeyEntryStarted, .passkeyDigitEntered, .passkeyDigitEntered, .passkeyDigitErased, .passkeyEntryCompleted] {
                await keypresses.notify(k)
            }
            return 123_456
        }
    }

    /// Hands the peer's keypress notifications to the test.
    struct Watcher: PairingAgent {
        let seen: AsyncStream<KeypressNotificationType>.Continuation
        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { nil }
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
        func confirmJustWorks(peer: LEAddress) async -> Bool { true }
        func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress) { seen.yield(notification) }
    }

    func pairing(_ options: PairingOptions, agent: any PairingAgent) -> Task<PairingError?, Never> {
        let link = fixture.link
        return Task {
            do throws(PairingError) { _ = try await link.pair(options: options, agent: agent); return nil } catch { return error }
        }
    }

    @Test func typingHereIsReportedToThePeer() async throws {
        var options = PairingOptions()
        options.ioCapability = .keyboardOnly
        options.mitm = true
        options.secureConnections = false
        options.keypressNotifications = true
        let agent = Typist()
        let task = pairing(options, agent: agent)
        // Pairing Request: KeyboardOnly (0x02), AuthReq Bonding|MITM|Keypress = 0x15.
        #expect(try await fixture.smpSent(count: 1)[0] == [0x01, 0x02, 0x00, 0x15, 0x10, 0x00, 0x07])
        // Pairing Response: DisplayOnly, legacy, Bonding|MITM|Keypress: this side types.
        try fixture.sendSMP([0x02, 0x00, 0x00, 0x15, 0x10, 0x00, 0x07])
        let sent = try await fixture.smpSent(count: 7)
        #expect(Array(sent[1...5]) == [[0x0E, 0x00], [0x0E, 0x01], [0x0E, 0x01], [0x0E, 0x02], [0x0E, 0x04]])
        // Then the legacy Pairing Confirm (3.5.3).
        #expect(sent[6].first == 0x03 && sent[6].count == 17)
        #expect(agent.enabled.withLock { $0 } == true)
        task.cancel()
        _ = await task.value
    }

    @Test func nothingIsSentWhenThePeerDidNotAskForKeypresses() async throws {
        var options = PairingOptions()
        options.ioCapability = .keyboardOnly
        options.mitm = true
        options.secureConnections = false
        options.keypressNotifications = true
        let agent = Typist()
        let task = pairing(options, agent: agent)
        _ = try await fixture.smpSent(count: 1)
        try fixture.sendSMP([0x02, 0x00, 0x00, 0x05, 0x10, 0x00, 0x07])
        let sent = try await fixture.smpSent(count: 2)
        #expect(sent[1].first == 0x03, "a keypress notification went to a peer that did not ask for them")
        #expect(agent.enabled.withLock { $0 } == false)
        task.cancel()
        _ = await task.value
    }

    @Test func thePeersTypingReachesTheAgent() async throws {
        var options = PairingOptions()
        options.ioCapability = .displayOnly
        options.mitm = true
        options.secureConnections = false
        options.keypressNotifications = true
        let (seen, feed) = AsyncStream<KeypressNotificationType>.makeStream()
        let task = pairing(options, agent: Watcher(seen: feed))
        _ = try await fixture.smpSent(count: 1)
        // The peer types (KeyboardOnly) and asks for keypress notifications.
        try fixture.sendSMP([0x02, 0x02, 0x00, 0x15, 0x10, 0x00, 0x07])
        #expect(try await fixture.smpSent(count: 2)[1].first == 0x03)
        for t: UInt8 in [0x00, 0x01, 0x03, 0x04] {
            try fixture.sendSMP([0x0E, t])
        }
        var received: [KeypressNotificationType] = []
        for await k in seen {
            received.append(k)
            if received.count == 4 { break }
        }
        #expect(received == [.passkeyEntryStarted, .passkeyDigitEntered, .passkeyCleared, .passkeyEntryCompleted])
        // Progress reports are no step of the procedure: Pairing Failed still ends it.
        try fixture.sendSMP([0x05, 0x01])
        #expect(await task.value?.kind == .peerFailed(.passkeyEntryFailed))
    }
}
