import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// The Security Manager over the in-process virtual controller: the PDUs this side sends are
/// checked byte for byte against Vol 3, Part H, 3.5; the peer's PDUs are injected by hand;
/// time is virtual (the 30 s SMP timeout of 3.4).
@Suite(.timeLimit(.minutes(1)))
struct SecurityManagerTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    /// Starts pairing in the background and returns it once the Pairing Request is out.
    func startPairing(_ options: PairingOptions = PairingOptions()) async throws -> (Task<Result<Bond, PairingError>, Never>, [UInt8]) {
        let link = fixture.link
        let task = Task { () -> Result<Bond, PairingError> in
            do throws(PairingError) { return .success(try await link.pair(options: options)) } catch { return .failure(error) }
        }
        let request = try await fixture.vc.waitForL2CAP(channelID: L2CAPChannelID.securityManager)
        return (task, request.payload)
    }

    @Test func pairingRequestCarriesTheOptions() async throws {
        var options = PairingOptions()
        options.ioCapability = .keyboardDisplay
        options.mitm = true
        let (task, request) = try await startPairing(options)
        // Code 0x01, IO KeyboardDisplay, no OOB, AuthReq bonding|MITM|SC = 0x0D, 16 octets,
        // initiator keys none, responder keys EncKey|IdKey|SignKey (3.5.1).
        #expect(request == [0x01, 0x04, 0x00, 0x0D, 0x10, 0x00, 0x07])
        task.cancel()
        _ = await task.value
    }

    @Test func silentPeerTimesOutAfterThirtySecondsAndSMPStaysDead() async throws {
        let (task, _) = try await startPairing()
        await fixture.vc.advance(by: .seconds(29))
        await fixture.vc.settle()
        await fixture.vc.advance(by: .seconds(1))
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded with a silent peer"); return }
        #expect(error.kind == .timeout)
        #expect(error.peer == Self.peer)
        // After the timeout no SMP PDU may be sent on this link (3.4): not even Pairing Failed.
        #expect(fixture.smpSentCount == 1)
        await #expect(throws: PairingError(peer: Self.peer, .channelDead)) { try await fixture.link.pair() }
    }

    @Test func peerPairingFailedNamesTheReasonAndThePeer() async throws {
        let (task, _) = try await startPairing()
        try fixture.sendSMP([0x05, 0x01])
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.kind == .peerFailed(.passkeyEntryFailed))
        #expect("\(error)".hasPrefix("Passkey Entry Failed (0x01) pairing with C0:11:22:33:44:77"))
    }

    @Test func legacyAnswerIsRefusedInSecureConnectionsOnlyMode() async throws {
        var options = PairingOptions()
        options.secureConnectionsOnly = true
        let (task, _) = try await startPairing(options)
        // Pairing Response without the SC bit: NoInputNoOutput, bonding only.
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x01, 0x10, 0x00, 0x07])
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .authenticationRequirements)
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x03])
    }

    @Test func tooShortKeyIsRefused() async throws {
        let (task, _) = try await startPairing()
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x09, 0x07, 0x00, 0x07])
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .encryptionKeySize)
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x06])
    }

    @Test func malformedPDUFailsPairingWithInvalidParameters() async throws {
        let (task, _) = try await startPairing()
        try fixture.sendSMP([0x02, 0x03, 0x00])
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .invalidParameters)
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x0A])
    }

    @Test func securityRequestAndKeypressDuringPairingAreIgnored() async throws {
        let (task, _) = try await startPairing()
        try fixture.sendSMP([0x0B, 0x01])
        try fixture.sendSMP([0x0E, 0x00])
        try fixture.sendSMP([0x05, 0x08])
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        // The pairing ended with the peer's own Pairing Failed, not with an unexpected PDU.
        #expect(error.kind == .peerFailed(.unspecifiedReason))
        #expect(fixture.smpSentCount == 1)
    }

    @Test func outOfOrderPDUFailsPairing() async throws {
        let (task, _) = try await startPairing()
        // A Pairing Random where the Pairing Response belongs.
        try fixture.sendSMP([0x04] + [UInt8](repeating: 0x11, count: 16))
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .unspecifiedReason)
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x08])
    }

    /// CVE-2018-5383: a public key off the curve ends pairing with DHKey Check Failed before
    /// any confirm value is exchanged.
    @Test func publicKeyOffTheCurveIsRefused() async throws {
        let (task, _) = try await startPairing()
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x09, 0x10, 0x00, 0x07])
        let ours = try await fixture.smpSent(count: 2)[1]
        #expect(ours.count == 65 && ours[0] == 0x0C)
        // X of the sample key of Vol 2, Part G, 7.1.2 with Y = 0: not on P-256.
        let x = hex("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
        try fixture.sendSMP([0x0C] + x.reversed() + [UInt8](repeating: 0, count: 32))
        guard case .failure(let error) = await task.value else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .dhKeyCheckFailed)
        #expect(try await fixture.smpSent(count: 3)[2] == [0x05, 0x0B])
    }

    @Test func securityRequestWithoutAHandlerIsRefused() async throws {
        _ = try await fixture.link.securityManager()
        try fixture.sendSMP([0x0B, 0x0D])
        #expect(try await fixture.smpSent(count: 1)[0] == [0x05, 0x05])
    }

    @Test func securityRequestStartsPairingWhenAccepted() async throws {
        try await fixture.link.acceptSecurityRequests()
        try fixture.sendSMP([0x0B, 0x01])
        #expect(try await fixture.smpSent(count: 1)[0] == [0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x07])
    }

    /// The virtual peer has no keys: LE Enable Encryption ends in PIN or Key Missing (0x06).
    @Test func bondThePeerForgotIsReported() async throws {
        let ltk = LongTermKey(key: 0x1234, ediv: 0, rand: 0, keySize: 16, authenticated: false, secureConnections: true)
        let store = MemoryBondStore([Bond(peer: Self.peer, longTermKey: ltk)])
        await #expect(throws: PairingError(peer: Self.peer, .peerForgotBond)) { try await fixture.link.requireSecurity(.encrypted, store: store) }
        let enable = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x2019))
        // Handle, Rand 0, EDIV 0, then the LTK least significant octet first (Vol 4, Part E, 7.8.24).
        #expect(Array(enable.parameters.suffix(16)) == [0x34, 0x12] + [UInt8](repeating: 0, count: 14))
        #expect(await fixture.link.securityLevel == SecurityLevel.none)
    }

    /// A peer that ends the link when it has no key (Disconnection Complete, Vol 4, Part E,
    /// 7.7.5, reason PIN or Key Missing) is reported the same way.
    @Test func peerThatDisconnectsForAMissingKeyForgotTheBond() async throws {
        let handle = try #require(await fixture.link.handle)
        let h = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        fixture.vc.answer(HCIOpcode(rawValue: 0x2019), with: .events({ _ in
            [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x19, 0x20]), HCIEventPacket(code: 0x05, parameters: [0x00] + h + [0x06])]
        }))
        let ltk = LongTermKey(key: 0x1234, ediv: 0, rand: 0, keySize: 16, authenticated: false, secureConnections: true)
        let store = MemoryBondStore([Bond(peer: Self.peer, longTermKey: ltk)])
        await #expect(throws: PairingError(peer: Self.peer, .peerForgotBond)) { try await fixture.link.requireSecurity(.encrypted, store: store) }
    }

    /// LE Long Term Key Request (Vol 4, Part E, 7.7.65.5: subevent 0x05, handle, Random_Number,
    /// EDIV) is answered from the provider with LE Long Term Key Request Reply (7.8.25), and
    /// refused with the Negative Reply (7.8.26) when it has no key.
    @Test func longTermKeyRequestsAreAnsweredFromTheProvider() async throws {
        let handle = try #require(await fixture.link.handle)
        await fixture.central.setLongTermKeyProvider { peer, ediv, rand in
            peer == Self.peer && ediv == 0x1234 && rand == 0x0102_0304_0506_0708 ? 0x00FF_EEDD_CCBB_AA99_8877_6655_4433_2211 : nil
        }
        let h = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        fixture.vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x05] + h + [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x34, 0x12])))
        let reply = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201A))
        #expect(reply.parameters == h + [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x00])
        fixture.vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x05] + h + [UInt8](repeating: 0, count: 8) + [0x00, 0x00])))
        let refusal = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201B))
        #expect(refusal.parameters == h)
    }

    /// Encryption Change (Vol 4, Part E, 7.7.8: status, handle, Encryption_Enabled) moves the
    /// link's level and is reported in its event stream.
    @Test func encryptionChangeEventsSetTheLevel() async throws {
        let handle = try #require(await fixture.link.handle)
        var events = await fixture.link.events().makeAsyncIterator()
        let h = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        fixture.vc.inject(.event(HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x01])))
        #expect(await events.nextLifecycle() == .securityChanged(.encrypted))
        #expect(await fixture.link.securityLevel == .encrypted)
        fixture.vc.inject(.event(HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x00])))
        #expect(await events.nextLifecycle() == .securityChanged(SecurityLevel.none))
    }
}
