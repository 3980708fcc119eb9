import Testing
import BLECore
@testable import SMP
import BLEWire

/// The CCCDs a GATT server keeps per bond (Vol 3, Part G, 3.3.3.3), in the bond file as
/// `gatt.cccd`: written sorted by handle, read back, absent from files written before the key
/// existed (they load as they did), and refused when malformed. CCCD values: bit 0
/// notifications, bit 1 indications (Part G, Table 3.11).
struct BondFileClientConfigurationTests {
    static let peer = LEAddress(BluetoothAddress("C0:00:00:00:00:02")!, type: .random)

    /// A version 1 file as written before `gatt.cccd`: a Just Works LE Secure Connections bond.
    static let versionOneFile = """
        # swift-ble-host bond 1
        peer=C0:00:00:00:00:02/random
        created=1700000000
        ltk=2965F176A1084A02FD3F6A20CE636E20
        ltk.ediv=0
        ltk.rand=0
        ltk.keySize=16
        ltk.authenticated=0
        ltk.secureConnections=1
        end

        """

    /// The same file with a `gatt.cccd` line before `end`.
    static func withCCCD(_ value: String) -> String { String(versionOneFile.dropLast("end\n".count)) + "gatt.cccd=\(value)\nend\n" }

    @Test func aFileWithoutTheKeyLoadsWithNoCCCDs() throws {
        let bond = try BondFile.decode(Self.versionOneFile)
        #expect(bond.clientConfigurations.isEmpty)
        #expect(bond.longTermKey?.key == 0x2965_F176_A108_4A02_FD3F_6A20_CE63_6E20)
        // Written back unchanged: no `gatt.cccd` line without CCCDs.
        #expect(BondFile.encode(bond) == Self.versionOneFile)
    }

    @Test func cccdsAreWrittenSortedAndReadBack() throws {
        var bond = try BondFile.decode(Self.versionOneFile)
        bond.clientConfigurations = [0x0012: 0x0002, 0x000A: 0x0001, 0x0020: 0x0000]
        let text = BondFile.encode(bond)
        // Zero values are not kept: a client that unsubscribed has nothing to restore.
        #expect(text == Self.withCCCD("000A:0001,0012:0002"))
        #expect(try BondFile.decode(text).clientConfigurations == [0x000A: 0x0001, 0x0012: 0x0002])
    }

    @Test(arguments: ["000A", "000A:1", "0000:0001", "000A:0001,000A:0002", "+00A:0001", "000A:0001,", "XYZW:0001", "000A:00010"])
    func aMalformedEntryIsRefused(_ value: String) {
        let text = Self.withCCCD(value)
        #expect(throws: BondFileError.self) { try BondFile.decode(text) }
    }

    @Test func moreEntriesThanTheLimitAreRefused() {
        let entries = (1...(Bond.clientConfigurationLimit + 1)).map { BondFile.hex16(UInt16($0)) + ":0001" }.joined(separator: ",")
        let text = Self.withCCCD(entries)
        #expect(throws: BondFileError.self) { try BondFile.decode(text) }
    }
}
