import Testing
import BLECore
@testable import SMP
import BLEWire

/// `Bond.peerSignCounter`, the last SignCounter accepted from the peer (Vol 3, Part H, 2.4.5),
/// in the bond file: written after the peer's CSRK, read back, and absent in files written
/// before it existed.
struct PeerSignCounterTests {
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)

    @Test func bondFileKeepsThePeerCounter() throws {
        var bond = Bond(peer: Self.peer, signatureKey: 0x2B7E_1516_28AE_D2A6_ABF7_1588_09CF_4F3C, created: 1_700_000_000)
        bond.peerSignCounter = 77
        let text = BondFile.encode(bond)
        #expect(text.contains("\ncsrk=2B7E151628AED2A6ABF7158809CF4F3C\ncsrk.signCounter=77\n"))
        #expect(try BondFile.decode(text) == bond)
    }

    @Test func olderFilesHaveNoPeerCounter() throws {
        let bond = Bond(peer: Self.peer, signatureKey: 7, created: 1_700_000_000)
        let text = BondFile.encode(bond)
        #expect(!text.contains("csrk.signCounter"))
        #expect(try BondFile.decode(text).peerSignCounter == nil)
    }

    @Test func badPeerCounterIsRefused() {
        let good = BondFile.encode(Bond(peer: Self.peer, signatureKey: 7))
        #expect(good.hasSuffix("\nend\n"))
        let text = String(good.dropLast(4)) + "csrk.signCounter=-1\nend\n"
        #expect(throws: BondFileError.self) { try BondFile.decode(text) }
    }
}
