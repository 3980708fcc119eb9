import Testing
import Synchronization
import BLECore
@testable import SMP
import BLEWire

/// The data signing algorithm (Vol 3, Part H, 2.4.5): MAC = MSB64(AES-CMAC_CSRK(m ||
/// SignCounter)), against the AES-CMAC sample data of Vol 3, Part H, Appendix D.1 (the
/// examples of RFC 4493, key 2b7e1516 28aed2a6 abf71588 09cf4f3c), and the SignCounter kept in
/// the bond.
struct SigningTests {
    static let csrk = u128("2b7e1516 28aed2a6 abf71588 09cf4f3c")
    /// M of D.1, as the specification prints it (most significant octet first).
    static let m = hex("""
        6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
        30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710
        """)

    /// The first `length` octets of M, read as m || SignCounter: on the air (least significant
    /// octet first) the message is M reversed, its last four octets the counter.
    static func signed(_ length: Int) throws -> (message: [UInt8], counter: UInt32, mac: UInt64) {
        let air = Array(m[0..<length].reversed())
        let counter = air.suffix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
        let mac = try SMPToolbox.signature(csrk: csrk, message: Array(air.dropLast(4)), signCounter: counter)
        return (Array(air.dropLast(4)), counter, mac)
    }

    /// D.1.3 (Mlen 320 bits): AES-CMAC dfa66747 de9ae630 30ca3261 1497c827, MAC = its 64
    /// most significant bits.
    @Test func macIsTheTopOfTheCMACOfD13() throws {
        let s = try Self.signed(40)
        #expect(s.counter == 0x6BC1_BEE2)
        #expect(s.mac == 0xDFA6_6747_DE9A_E630)
    }

    /// D.1.4 (Mlen 512 bits): AES-CMAC 51f0bebf 7e3b9d92 fc497417 79363cfe.
    @Test func macIsTheTopOfTheCMACOfD14() throws {
        #expect(try Self.signed(64).mac == 0x51F0_BEBF_7E3B_9D92)
    }

    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)

    /// Each signature takes the bond's counter and saves it raised; the MAC is the one of
    /// 2.4.5 for that counter.
    @Test func signerCountsInTheBond() async throws {
        var bond = Bond(peer: Self.peer)
        bond.localSignatureKey = Self.csrk
        bond.localSignCounter = 0x6BC1_BEE2
        let store = MemoryBondStore([bond])
        let signer = store.dataSigner(for: Self.peer)
        let d13 = try Self.signed(40)
        let first = try await signer.sign(d13.message)
        #expect(first.signCounter == 0x6BC1_BEE2 && first.mac == 0xDFA6_6747_DE9A_E630)
        #expect(store.bond(for: Self.peer)?.localSignCounter == 0x6BC1_BEE3)
        let second = try await signer.sign(d13.message)
        #expect(second.signCounter == 0x6BC1_BEE3)
        #expect(second.mac == (try SMPToolbox.signature(csrk: Self.csrk, message: d13.message, signCounter: 0x6BC1_BEE3)))
        #expect(second.mac != first.mac)
    }

    @Test func noLocalKeyIsATypedError() async {
        let store = MemoryBondStore([Bond(peer: Self.peer, signatureKey: 7)])
        await #expect(throws: SigningError.noSignatureKey(peer: Self.peer)) { try await store.dataSigner(for: Self.peer).sign([0xD2, 0x03, 0x00]) }
    }

    @Test func exhaustedCounterIsRefused() async {
        var bond = Bond(peer: Self.peer)
        bond.localSignatureKey = Self.csrk
        bond.localSignCounter = .max
        let store = MemoryBondStore([bond])
        await #expect(throws: SigningError.counterExhausted(peer: Self.peer)) { try await store.dataSigner(for: Self.peer).sign([0xD2, 0x03, 0x00]) }
    }

    /// The local CSRK and its counter survive the bond file.
    @Test func bondFileKeepsTheLocalKeyAndCounter() throws {
        var bond = Bond(peer: Self.peer, signatureKey: 7, created: 1_700_000_000)
        bond.localSignatureKey = Self.csrk
        bond.localSignCounter = 41
        let text = BondFile.encode(bond)
        #expect(text.contains("\nlocalCsrk=2B7E151628AED2A6ABF7158809CF4F3C\nlocalCsrk.signCounter=41\n"))
        #expect(try BondFile.decode(text) == bond)
    }
}
