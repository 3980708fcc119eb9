import Testing
import BLECore
@testable import SMP
import BLEWire

/// A bonded client's Client Supported Features (Vol 3, Part G, 7.2) and change awareness
/// (2.5.2.1) in the bond file, as `gatt.clientFeatures` (the octet in hex) and
/// `gatt.databaseHash` (the Database Hash of 7.3.1 the client was last aware of, most
/// significant octet first; all zero: change-unaware), after `gatt.cccd`. Files without them
/// load as before and are written back unchanged.
struct BondFileClientStateTests {
    static let versionOneFile = BondFileClientConfigurationTests.versionOneFile

    /// The hash value: the example database of Vol 3, Part G, 7.3.2 hashes to
    /// F1CA2D48ECF58BAC8A8830BBB9FBA990 (DatabaseHashTests checks the server's hash against it).
    static let hash: UInt128 = 0xF1CA_2D48_ECF5_8BAC_8A88_30BB_B9FB_A990

    @Test func aFileWithoutTheKeysLoadsAsChangeAwareWithNoFeatures() throws {
        let bond = try BondFile.decode(Self.versionOneFile)
        #expect(bond.clientSupportedFeatures == 0)
        #expect(bond.clientDatabaseHash == nil)
        #expect(BondFile.encode(bond) == Self.versionOneFile)
    }

    @Test func featuresAndHashAreWrittenAfterTheCCCDsAndReadBack() throws {
        var bond = try BondFile.decode(Self.versionOneFile)
        bond.clientConfigurations = [0x000A: 0x0001]
        bond.clientSupportedFeatures = 0x05
        bond.clientDatabaseHash = Self.hash
        let text = BondFile.encode(bond)
        #expect(text == String(Self.versionOneFile.dropLast("end\n".count))
                + "gatt.cccd=000A:0001\ngatt.clientFeatures=05\ngatt.databaseHash=F1CA2D48ECF58BAC8A8830BBB9FBA990\nend\n")
        let back = try BondFile.decode(text)
        #expect(back.clientSupportedFeatures == 0x05)
        #expect(back.clientDatabaseHash == Self.hash)
        #expect(back == bond)
    }

    /// A change-unaware client: the hash is written as 32 zeros.
    @Test func changeUnawareIsAZeroHash() throws {
        var bond = try BondFile.decode(Self.versionOneFile)
        bond.clientDatabaseHash = 0
        let text = BondFile.encode(bond)
        #expect(text.contains("\ngatt.databaseHash=00000000000000000000000000000000\nend\n"))
        #expect(try BondFile.decode(text).clientDatabaseHash == 0)
    }

    @Test(arguments: ["gatt.clientFeatures=5", "gatt.clientFeatures=105", "gatt.clientFeatures=G1", "gatt.clientFeatures=+5",
                      "gatt.databaseHash=F1CA", "gatt.databaseHash=F1CA2D48ECF58BAC8A8830BBB9FBA99Z"])
    func aMalformedValueIsRefused(_ line: String) {
        let text = String(Self.versionOneFile.dropLast("end\n".count)) + line + "\nend\n"
        #expect(throws: BondFileError.self) { try BondFile.decode(text) }
    }
}
