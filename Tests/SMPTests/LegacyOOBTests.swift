import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// LE legacy Out of Band pairing (Vol 3, Part H, 2.3.5.4) on the in-process virtual
/// controller: the OOB data flag of the Pairing Request (3.5.1) and the TK in c1 (2.2.3,
/// checked against its sample data in ToolboxTests).
@Suite(.timeLimit(.minutes(1)))
struct LegacyOOBTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_7A), type: .random)
    static let tk: UInt128 = 0x0123_4567_89AB_CDEF_0011_2233_4455_6677
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    func pairing(_ options: PairingOptions) -> Task<PairingError?, Never> {
        let link = fixture.link
        return Task {
            do throws(PairingError) { _ = try await link.pair(options: options); return nil } catch { return error }
        }
    }

    /// A TK sets the OOB flag only when this side offers legacy pairing alone.
    @Test(arguments: [(false, UInt8(0x01)), (true, UInt8(0x00))])
    func theOOBFlagNeedsLegacyPairingOnly(secureConnections: Bool, flag: UInt8) async throws {
        var options = PairingOptions()
        options.secureConnections = secureConnections
        options.legacyOOBTemporaryKey = Self.tk
        let task = pairing(options)
        let request = try await fixture.smpSent(count: 1)[0]
        #expect(request.count == 7 && request[2] == flag)
        task.cancel()
        _ = await task.value
    }

    @Test func theConfirmValueIsMadeWithTheTK() async throws {
        var options = PairingOptions()
        options.secureConnections = false
        options.legacyOOBTemporaryKey = Self.tk
        let task = pairing(options)
        let preq = try await fixture.smpSent(count: 1)[0]
        // Pairing Response: NoInputNoOutput, OOB data present, Bonding, legacy.
        let pres: [UInt8] = [0x02, 0x03, 0x01, 0x01, 0x10, 0x00, 0x07]
        try fixture.sendSMP(pres)
        let mconfirm = try await fixture.smpSent(count: 2)[1]
        #expect(mconfirm.first == 0x03 && mconfirm.count == 17)
        try fixture.sendSMP([0x03] + [UInt8](repeating: 0x5A, count: 16))
        let mrand = try await fixture.smpSent(count: 3)[2]
        #expect(mrand.first == 0x04 && mrand.count == 17)
        let local = try #require(await fixture.link.localAddress)
        let expected = try SMPToolbox.c1(k: Self.tk, r: UInt128(littleEndianBytes: mrand.dropFirst()), preq: preq, pres: pres,
                                         iat: 0, ia: local.address, rat: 1, ra: Self.peer.address)
        #expect(UInt128(littleEndianBytes: mconfirm.dropFirst()) == expected)
        // The made-up Sconfirm does not match the peer's Srand: Confirm Value Failed, naming the OOB key.
        try fixture.sendSMP([0x04] + [UInt8](repeating: 0x11, count: 16))
        let error = await task.value
        #expect(error?.reason == .confirmValueFailed)
        #expect(error.map { "\($0)".contains("wrong OOB key?") } == true)
    }

    @Test func oobDataOnThePeerAloneIsNotOOBPairing() async throws {
        var options = PairingOptions()
        options.secureConnections = false
        let task = pairing(options)
        _ = try await fixture.smpSent(count: 1)
        // Both flags are needed for legacy OOB (2.3.5.1): this side has none, so no OOB.
        try fixture.sendSMP([0x02, 0x03, 0x01, 0x01, 0x10, 0x00, 0x07])
        #expect(try await fixture.smpSent(count: 2)[1].first == 0x03)
        task.cancel()
        _ = await task.value
    }
}
