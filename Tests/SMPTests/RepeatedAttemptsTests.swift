import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// Repeated attempts (Vol 3, Part H, 2.3.6) on virtual time: after a pairing fails on its
/// authentication, a new attempt with the same peer waits an interval that doubles with each
/// failure; other failures do not count.
@Suite(.timeLimit(.minutes(1)))
struct RepeatedAttemptsTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_78), type: .random)
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    /// Starts a pairing, waits for its Pairing Request (the `n`th SMP PDU sent), then lets
    /// the peer answer Pairing Failed with `reason`; returns the pairing's error.
    func failedPairing(requestNumber n: Int, reason: UInt8) async throws -> PairingError? {
        let link = fixture.link
        let task = Task { () -> PairingError? in
            do throws(PairingError) { try await link.pair(); return nil } catch { return error }
        }
        let request = try await fixture.vc.waitForL2CAP(channelID: L2CAPChannelID.securityManager, count: n)
        #expect(request.payload.first == 0x01)
        try fixture.sendSMP([0x05, reason])
        return await task.value
    }

    func refusal() async -> PairingError.Kind? {
        do throws(PairingError) { try await fixture.link.pair(); return nil } catch { return error.kind }
    }

    @Test func theIntervalDoublesAfterEachAuthenticationFailure() async throws {
        // Confirm Value Failed (0x04): the peer's check of our confirm value failed.
        #expect(try await failedPairing(requestNumber: 1, reason: 0x04)?.reason == .confirmValueFailed)
        #expect(await refusal() == .repeatedAttempts(retryAfter: .seconds(2)))
        // Refused locally: no Pairing Request went out.
        #expect(fixture.smpSentCount == 1)

        await fixture.vc.advance(by: .seconds(2))
        #expect(try await failedPairing(requestNumber: 2, reason: 0x01)?.reason == .passkeyEntryFailed)
        await fixture.vc.advance(by: .seconds(3))
        #expect(await refusal() == .repeatedAttempts(retryAfter: .seconds(1)))
        await fixture.vc.advance(by: .seconds(1))
        // The third attempt goes out; DHKey Check Failed (0x0B) makes the interval 8 s.
        #expect(try await failedPairing(requestNumber: 3, reason: 0x0B)?.reason == .dhKeyCheckFailed)
        let kind = await refusal()
        #expect(kind == .repeatedAttempts(retryAfter: .seconds(8)))
        #expect("\(PairingError(peer: Self.peer, kind!))" == "pairing with C0:11:22:33:44:78 failed on its authentication just before: try again in 8.0 s (Repeated Attempts, Vol 3, Part H, 2.3.6)")
    }

    @Test func thePeersRepeatedAttemptsCountsAndOtherFailuresDoNot() async throws {
        // Pairing Not Supported (0x05) says nothing about a guessed key: no back-off.
        #expect(try await failedPairing(requestNumber: 1, reason: 0x05)?.reason == .pairingNotSupported)
        // The peer's own Repeated Attempts (0x09) starts the back-off here too.
        #expect(try await failedPairing(requestNumber: 2, reason: 0x09)?.reason == .repeatedAttempts)
        #expect(await refusal() == .repeatedAttempts(retryAfter: .seconds(2)))
    }

    /// The record belongs to the central: a new link to the same peer waits as well.
    @Test func aNewLinkToThePeerStillWaits() async throws {
        #expect(try await failedPairing(requestNumber: 1, reason: 0x04)?.reason == .confirmValueFailed)
        try await fixture.link.disconnect()
        let again = try await fixture.connectAgain()
        do throws(PairingError) {
            try await again.pair()
            Issue.record("pairing went ahead during the back-off")
        } catch {
            #expect(error.kind == .repeatedAttempts(retryAfter: .seconds(2)))
        }
    }
}
