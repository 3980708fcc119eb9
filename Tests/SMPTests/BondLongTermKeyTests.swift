import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// LE Long Term Key Requests answered from a bond store (`store.longTermKeyProvider`), with
/// the exact HCI bytes of Vol 4, Part E: the LE Long Term Key Request event (7.7.65.5: 0x3E,
/// subevent 0x05, Connection_Handle, Random_Number, Encrypted_Diversifier, little endian), LE
/// Long Term Key Request Reply (7.8.25, opcode 0x201A: handle, LTK least significant octet
/// first) and its Negative Reply (7.8.26, opcode 0x201B: handle).
@Suite(.timeLimit(.minutes(1)))
struct BondLongTermKeyTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_79), type: .random)
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    /// The LE Long Term Key Request event for the fixture's link.
    func request(rand: [UInt8], ediv: [UInt8]) async throws -> HCIEventPacket {
        let handle = try #require(await fixture.link.handle)
        return HCIEventPacket(code: 0x3E, parameters: [0x05, UInt8(handle & 0xFF), UInt8(handle >> 8)] + rand + ediv)
    }

    var handleBytes: [UInt8] {
        get async throws {
            let handle = try #require(await fixture.link.handle)
            return [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        }
    }

    /// LE Secure Connections: EDIV and Rand are 0 and the bond's one key answers.
    @Test func secureConnectionsKeyAnswersARequestWithZeroEDIVAndRand() async throws {
        let ltk = LongTermKey(key: 0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100, ediv: 0, rand: 0, keySize: 16, authenticated: true, secureConnections: true)
        let store = MemoryBondStore([Bond(peer: Self.peer, longTermKey: ltk)])
        await fixture.central.setLongTermKeyProvider(store.longTermKeyProvider)
        fixture.vc.inject(.event(try await request(rand: [0, 0, 0, 0, 0, 0, 0, 0], ediv: [0, 0])))
        let reply = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201A))
        #expect(reply.parameters == (try await handleBytes) + [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                                                0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F])
        // A non-zero EDIV/Rand names a legacy key, which this bond does not have.
        fixture.vc.inject(.event(try await request(rand: [1, 0, 0, 0, 0, 0, 0, 0], ediv: [0, 0])))
        let refusal = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201B))
        #expect(refusal.parameters == (try await handleBytes))
    }

    /// LE legacy pairing: the key this side distributed, found by its EDIV and Rand; another
    /// EDIV gets the Negative Reply, and so does EDIV/Rand 0 (no Secure Connections key).
    @Test func legacyKeyIsFoundByItsEDIVAndRand() async throws {
        let local = LongTermKey(key: 0x00FF_EEDD_CCBB_AA99_8877_6655_4433_2211, ediv: 0x1234, rand: 0x0102_0304_0506_0708,
                                keySize: 16, authenticated: false, secureConnections: false)
        let peers = LongTermKey(key: 0x77, ediv: 0x4321, rand: 9, keySize: 16, authenticated: false, secureConnections: false)
        let store = MemoryBondStore([Bond(peer: Self.peer, longTermKey: peers, localLongTermKey: local)])
        await fixture.central.setLongTermKeyProvider(store.longTermKeyProvider)
        let h = try await handleBytes
        fixture.vc.inject(.event(try await request(rand: [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01], ediv: [0x34, 0x12])))
        let reply = try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201A))
        #expect(reply.parameters == h + [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x00])
        // The peer's own key (what this side encrypts with as central) is not this side's to give.
        fixture.vc.inject(.event(try await request(rand: [9, 0, 0, 0, 0, 0, 0, 0], ediv: [0x21, 0x43])))
        #expect(try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201B)).parameters == h)
        fixture.vc.inject(.event(try await request(rand: [0, 0, 0, 0, 0, 0, 0, 0], ediv: [0, 0])))
        #expect(try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201B), count: 2).parameters == h)
        #expect(fixture.vc.commandsReceived.filter { $0.opcode.rawValue == 0x201A }.count == 1)
    }

    /// A peer without a bond: the Negative Reply.
    @Test func unknownPeerGetsTheNegativeReply() async throws {
        let other = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_80), type: .random)
        let ltk = LongTermKey(key: 1, ediv: 0, rand: 0, keySize: 16, authenticated: false, secureConnections: true)
        let store = MemoryBondStore([Bond(peer: other, longTermKey: ltk)])
        await fixture.central.setLongTermKeyProvider(store.longTermKeyProvider)
        fixture.vc.inject(.event(try await request(rand: [0, 0, 0, 0, 0, 0, 0, 0], ediv: [0, 0])))
        #expect(try await fixture.vc.waitForCommand(HCIOpcode(rawValue: 0x201B)).parameters == (try await handleBytes))
        #expect(store.longTermKey(for: Self.peer, ediv: 0, rand: 0) == nil)
        #expect(store.longTermKey(for: other, ediv: 0, rand: 0) == 1)
    }
}
