import Testing
import Synchronization
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// The Security Manager as the responder on a peripheral-role link of the in-process virtual
/// controller: the test plays the central's Security Manager byte by byte (Vol 3, Part H, 3.5
/// and 3.6), computing its values with the toolbox functions that ToolboxTests checks against
/// the specification's sample data (Appendix D); the controller's LE Long Term Key Request
/// (Vol 4, Part E, 7.7.65.5) and Encryption Change (7.7.8) are injected; time is virtual.
@Suite(.timeLimit(.minutes(1)))
struct ResponderTests {
    static let central = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let vc: VirtualController
    let host: Central
    let link: Connection
    let local: LEAddress
    let results: AsyncStream<Result<Bond, PairingError>>
    let report: @Sendable (Result<Bond, PairingError>) -> Void

    init() async throws {
        try await self.init(central: Self.central)
    }

    init(central: LEAddress) async throws {
        vc = VirtualController()
        host = try await vc.poweredOnCentral()
        link = try await vc.acceptConnection(on: host, advertising: AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported])]), from: central)
        await vc.settle()
        local = try #require(await link.localAddress)
        let (results, feed) = AsyncStream<Result<Bond, PairingError>>.makeStream()
        self.results = results
        report = { feed.yield($0) }
    }

    func sendSMP(_ payload: [UInt8]) throws {
        try vc.sendL2CAP(from: link.peer, channelID: L2CAPChannelID.securityManager, payload: payload)
    }

    /// The SMP PDU number `index` (from 0) this side sent.
    func sent(_ index: Int) async throws -> [UInt8] {
        _ = try await vc.waitForL2CAP(channelID: L2CAPChannelID.securityManager, count: index + 1)
        return vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.securityManager }.map(\.payload)[index]
    }

    var sentCount: Int { vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.securityManager }.count }

    func outcome() async throws -> Result<Bond, PairingError> {
        var it = results.makeAsyncIterator()
        return try #require(await it.next())
    }

    var handleBytes: [UInt8] {
        get async throws {
            let h = try #require(await link.handle)
            return [UInt8(h & 0xFF), UInt8(h >> 8)]
        }
    }

    /// LE Long Term Key Request (subevent 0x05): handle, Random_Number, EDIV.
    func requestKey(rand: UInt64 = 0, ediv: UInt16 = 0) async throws -> [UInt8] {
        let h = try await handleBytes
        let r = (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * $0)) }
        vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x05] + h + r + [UInt8(ediv & 0xFF), UInt8(ediv >> 8)])))
        let reply = try await vc.waitForCommand(HCIOpcode(rawValue: 0x201A))
        return reply.parameters
    }

    /// Encryption Change (0x08): success, handle, enabled.
    func encryptionChanged() async throws {
        vc.inject(.event(HCIEventPacket(code: 0x08, parameters: [0x00] + (try await handleBytes) + [0x01])))
    }

    @Test func pairingResponseCarriesTheOptions() async throws {
        var options = PairingOptions.responder
        options.ioCapability = .displayYesNo
        options.mitm = true
        try await link.acceptPairing(options: options, store: nil, onResult: report)
        // Pairing Request: KeyboardDisplay, no OOB, Bonding|MITM|SC (0x0D), 16 octets,
        // initiator keys IdKey|SignKey, responder keys EncKey|IdKey|SignKey (3.5.1).
        try sendSMP([0x01, 0x04, 0x00, 0x0D, 0x10, 0x06, 0x07])
        // Pairing Response (3.5.2): DisplayYesNo, no OOB, 0x0D, 16, the keys both allow.
        #expect(try await sent(0) == [0x02, 0x01, 0x00, 0x0D, 0x10, 0x06, 0x07])
    }

    @Test func withoutAcceptPairingTheRequestIsRefused() async throws {
        _ = try await link.securityManager()
        try sendSMP([0x01, 0x03, 0x00, 0x01, 0x10, 0x00, 0x01])
        // Pairing Failed, Pairing Not Supported (0x05).
        #expect(try await sent(0) == [0x05, 0x05])
    }

    @Test func aKeySizeBelowTheMinimumIsRefused() async throws {
        try await link.acceptPairing(onResult: report)
        try sendSMP([0x01, 0x03, 0x00, 0x09, 0x07, 0x00, 0x00])
        guard case .failure(let error) = try await outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .encryptionKeySize)
        #expect(try await sent(0) == [0x05, 0x06])
    }

    @Test func silentCentralTimesOutAfterThirtySeconds() async throws {
        try await link.acceptPairing(onResult: report)
        try sendSMP([0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x00])
        _ = try await sent(0)
        await vc.advance(by: .seconds(29))
        await vc.settle()
        await vc.advance(by: .seconds(1))
        guard case .failure(let error) = try await outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.kind == .timeout)
        // After the timeout no SMP PDU goes out on this link (3.4), not even Pairing Failed.
        #expect(sentCount == 1)
        await #expect(throws: PairingError(peer: Self.central, .channelDead)) { try await link.sendSecurityRequest(.encrypted) }
    }

    @Test func aDisconnectFailsThePairingAtOnce() async throws {
        try await link.acceptPairing(onResult: report)
        try sendSMP([0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x00])
        _ = try await sent(0)
        try vc.disconnect(Self.central)
        guard case .failure(let error) = try await outcome() else { Issue.record("pairing succeeded"); return }
        guard case .channelClosed = error.kind else { Issue.record("\(error)"); return }
    }

    @Test func securityRequestCarriesTheLevel() async throws {
        try await link.sendSecurityRequest(.authenticated)
        try await link.sendSecurityRequest(.encrypted, bonding: false)
        // Security Request (3.5.7): AuthReq Bonding|MITM|SC = 0x0D, then SC only = 0x08.
        #expect(try await sent(0) == [0x0B, 0x0D])
        #expect(try await sent(1) == [0x0B, 0x08])
    }

    /// LE legacy Just Works with the central's keys and ours: Mconfirm, Sconfirm, Mrand, Srand
    /// (2.3.5.5), the STK s1(0, Srand, Mrand) in the LTK Request Reply, then our Encryption
    /// Information and Central Identification before the central's keys (3.6.1).
    @Test func legacyJustWorksAsResponder() async throws {
        let store = MemoryBondStore()
        try await link.acceptPairing(store: store, onResult: report)
        let preq: [UInt8] = [0x01, 0x03, 0x00, 0x01, 0x10, 0x02, 0x01]
        try sendSMP(preq)
        let pres = try await sent(0)
        // This side offers SC (0x09); the central did not, so the pairing is legacy.
        #expect(pres == [0x02, 0x03, 0x00, 0x09, 0x10, 0x02, 0x01])
        let mrand: UInt128 = 0x5783_D521_5619_2B1E_1AD0_7B3A_E4D1_99E8
        let c1 = { (r: UInt128) throws -> UInt128 in
            try SMPToolbox.c1(k: 0, r: r, preq: preq, pres: pres, iat: 1, ia: Self.central.address, rat: 0, ra: local.address)
        }
        try sendSMP([0x03] + (try c1(mrand)).littleEndianBytes)
        let sconfirm = try await sent(1)
        try sendSMP([0x04] + mrand.littleEndianBytes)
        let srandPDU = try await sent(2)
        #expect(srandPDU.count == 17 && srandPDU[0] == 0x04 && sconfirm.count == 17 && sconfirm[0] == 0x03)
        let srand = UInt128(littleEndianBytes: srandPDU.dropFirst())
        #expect(Array(sconfirm.dropFirst()) == (try c1(srand)).littleEndianBytes)
        // LE Long Term Key Request Reply (7.8.25): handle, then the STK least significant first.
        let stk = try SMPToolbox.s1(k: 0, r1: srand, r2: mrand)
        #expect(try await requestKey() == (try await handleBytes) + stk.littleEndianBytes)
        try await encryptionChanged()
        let info = try await sent(3), ident = try await sent(4)
        #expect(info.count == 17 && info[0] == 0x06 && ident.count == 11 && ident[0] == 0x07)
        // The central's Identity Information and Identity Address Information (3.6.4, 3.6.5).
        try sendSMP([0x08] + [UInt8](repeating: 0xA5, count: 16))
        try sendSMP([0x09, 0x01] + (0..<6).map { UInt8(truncatingIfNeeded: Self.central.address.rawValue >> (8 * UInt64($0))) })
        let bond = try await outcome().get()
        let given = try #require(bond.localLongTermKey)
        #expect(given.key.littleEndianBytes == Array(info.dropFirst()))
        #expect([UInt8(given.ediv & 0xFF), UInt8(given.ediv >> 8)] == Array(ident[1...2]))
        let rand = (0..<8).map { UInt8(truncatingIfNeeded: given.rand >> (8 * UInt64($0))) }
        #expect(rand == Array(ident[3...10]))
        #expect(bond.identityResolvingKey == UInt128(littleEndianBytes: [UInt8](repeating: 0xA5, count: 16)))
        #expect(bond.identityAddress == Self.central)
        #expect(await link.securityLevel == .encrypted)
        #expect(store.bond(for: Self.central) == bond)
    }

    /// LE Secure Connections Just Works: PKa in, PKb out, Cb = f4(PKb, PKa, Nb, 0), Na in, Nb
    /// out, Ea checked and Eb = f6(MacKey, Nb, Na, 0, IOcapB, B, A) out (2.3.5.6.2, 2.3.5.6.5),
    /// then the LTK of f5 answers the LTK Request with EDIV and Rand zero. The central does
    /// not bond (AuthReq SC only): nothing is distributed and nothing is stored.
    @Test func secureConnectionsJustWorksAsResponder() async throws {
        let store = MemoryBondStore()
        try await link.acceptPairing(store: store, onResult: report)
        let preq: [UInt8] = [0x01, 0x03, 0x00, 0x08, 0x10, 0x00, 0x00]
        try sendSMP(preq)
        let pres = try await sent(0)
        #expect(pres == [0x02, 0x03, 0x00, 0x08, 0x10, 0x00, 0x00])
        let own = try P256KeyPair()
        try sendSMP(SMPPDU.pairingPublicKey(own.publicKey).bytes)
        let keyPDU = try SMPPDU(bytes: try await sent(1))
        guard case .pairingPublicKey(let pkb) = keyPDU else { Issue.record("no public key: \(keyPDU)"); return }
        guard case .pairingConfirm(let cb) = try SMPPDU(bytes: try await sent(2)) else { Issue.record("no confirm"); return }
        let na: UInt128 = 0xABAE_2B71_ECB2_FFFF_3E73_77D1_5484_CBD5
        try sendSMP([0x04] + na.littleEndianBytes)
        guard case .pairingRandom(let nb) = try SMPPDU(bytes: try await sent(3)) else { Issue.record("no random"); return }
        #expect(try SMPToolbox.f4(u: pkb.x, v: own.publicKey.x, x: nb, z: 0) == cb)
        let dhKey = try own.sharedSecret(with: pkb)
        let (macKey, ltk) = try SMPToolbox.f5(w: dhKey, n1: na, n2: nb, a1: Self.central, a2: local)
        let ea = try SMPToolbox.f6(w: macKey, n1: na, n2: nb, r: 0, ioCap: [preq[3], preq[2], preq[1]], a1: Self.central, a2: local)
        try sendSMP([0x0D] + ea.littleEndianBytes)
        let eb = try await sent(4)
        #expect(Array(eb.dropFirst()) == (try SMPToolbox.f6(w: macKey, n1: nb, n2: na, r: 0, ioCap: [pres[3], pres[2], pres[1]], a1: local, a2: Self.central)).littleEndianBytes)
        #expect(try await requestKey() == (try await handleBytes) + ltk.littleEndianBytes)
        try await encryptionChanged()
        let bond = try await outcome().get()
        #expect(bond.longTermKey == LongTermKey(key: ltk, ediv: 0, rand: 0, keySize: 16, authenticated: false, secureConnections: true))
        #expect(await link.securityLevel == .encrypted)
        #expect(store.allBonds().isEmpty)
        #expect(sentCount == 5)
    }

    /// The central refuses our Sconfirm with Pairing Failed instead of starting encryption:
    /// the pairing ends at once with its reason, without waiting for the SMP timer.
    @Test func pairingFailedInsteadOfEncryptionEndsAtOnce() async throws {
        try await link.acceptPairing(onResult: report)
        let preq: [UInt8] = [0x01, 0x03, 0x00, 0x01, 0x10, 0x00, 0x00]
        try sendSMP(preq)
        let pres = try await sent(0)
        let mrand: UInt128 = 0x1111_2222_3333_4444_5555_6666_7777_8888
        let mconfirm = try SMPToolbox.c1(k: 0, r: mrand, preq: preq, pres: pres, iat: 1, ia: Self.central.address, rat: 0, ra: local.address)
        try sendSMP([0x03] + mconfirm.littleEndianBytes)
        _ = try await sent(1)
        try sendSMP([0x04] + mrand.littleEndianBytes)
        // Srand is out: this side waits for the LTK Request; the central sends Pairing Failed,
        // Confirm Value Failed (0x04), instead.
        #expect(try await sent(2).first == 0x04)
        try sendSMP([0x05, 0x04])
        guard case .failure(let error) = try await outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.kind == .peerFailed(.confirmValueFailed))
        #expect(sentCount == 3)
    }

    /// A wrong Ea ends the pairing with DHKey Check Failed (0x0B) and no Eb.
    @Test func aWrongDHKeyCheckIsRefused() async throws {
        try await link.acceptPairing(onResult: report)
        try sendSMP([0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x00])
        _ = try await sent(0)
        let own = try P256KeyPair()
        try sendSMP(SMPPDU.pairingPublicKey(own.publicKey).bytes)
        _ = try await sent(2)
        try sendSMP([0x04] + [UInt8](repeating: 0x11, count: 16))
        _ = try await sent(3)
        try sendSMP([0x0D] + [UInt8](repeating: 0x22, count: 16))
        guard case .failure(let error) = try await outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .dhKeyCheckFailed)
        #expect(try await sent(4) == [0x05, 0x0B])
    }
}

/// A bonded central coming back with a resolvable private address: its LE Long Term Key
/// Request is answered from the bond found by its IRK (Vol 6, Part B, 1.3.2.3), and the
/// Encryption Change gives the link the bond's level.
@Suite(.timeLimit(.minutes(1)))
struct ResponderBondTests {
    static let irk: UInt128 = 0xEC02_3460_8F3C_B0A5_A7F3_7F7F_2B11_A1B2
    static let identity = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_66), type: .random)

    @Test func aBondedCentralsRPAGetsTheStoredKeyAtItsLevel() async throws {
        let rpa = try ResolvablePrivateAddress.make(irk: Self.irk, prand: 0x3F_1234)
        let bed = try await ResponderTests(central: rpa)
        let key = LongTermKey(key: 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10, ediv: 0xBEEF, rand: 0x1122_3344_5566_7788,
                              keySize: 16, authenticated: true, secureConnections: false)
        let store = MemoryBondStore([Bond(peer: Self.identity, identityAddress: Self.identity, localLongTermKey: key, identityResolvingKey: Self.irk)])
        try await bed.link.acceptPairing(store: store)
        var events = await bed.link.events().makeAsyncIterator()
        #expect(try await bed.requestKey(rand: key.rand, ediv: key.ediv) == (try await bed.handleBytes) + key.key.littleEndianBytes)
        try await bed.encryptionChanged()
        #expect(await events.nextLifecycle() == .securityChanged(.authenticated))
    }
}
