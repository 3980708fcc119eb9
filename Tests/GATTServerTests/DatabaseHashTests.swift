import Testing
import BLETestSupport
import GATTServer
import BLEWire

/// The Database Hash (Vol 3, Part G, 7.3) of the example database of the Core Specification
/// (Vol 3, Part G, Appendix B), whose hash the specification gives as
/// F1CA2D48ECF58BAC8A8830BBB9FBA990; BTstack checks the same attribute-list message and hash
/// (Fixtures/README.md).
struct DatabaseHashTests {
    static func u(_ n: UInt16) -> BluetoothUUID { BluetoothUUID(uuid16: n) }

    /// GAP (0x0001), GATT with Service Changed, Client Supported Features and Database Hash
    /// (0x0006), Glucose including the secondary Battery service (0x000E), Battery (0x0014).
    static let example = GATTDatabase(services: [
        .init(uuid: u(0x1800), characteristics: [
            .init(uuid: u(0x2A00), properties: [.read, .write]),
            .init(uuid: u(0x2A01), properties: [.read]),
        ]),
        .init(uuid: u(0x1801), characteristics: [
            .init(uuid: u(0x2A05), properties: [.indicate]),
            .init(uuid: u(0x2B29), properties: [.read, .write]),
            .init(uuid: u(0x2B2A), properties: [.read]),
        ]),
        .init(uuid: u(0x1808), includes: [u(0x180F)], characteristics: [
            .init(uuid: u(0x2A18), properties: [.read, .indicate, .extendedProperties], descriptors: [.extendedProperties()]),
        ]),
        .init(uuid: u(0x180F), isPrimary: false, characteristics: [
            .init(uuid: u(0x2A19), properties: [.read]),
        ]),
    ], includesGATTService: false)

    /// The hash as read: least significant octet first, as Vol 3, Part F, 3.3.1 has
    /// multi-octet values and as Zephyr serves it (the Bluetooth qualification tester expects
    /// that order; Bumble serves the CMAC octets unreversed).
    static let hash = Array(hex("F1CA2D48 ECF58BAC 8A8830BB B9FBA990").reversed())

    @Test func exampleDatabaseHash() async {
        let bed = ServerBed(Self.example)
        #expect(await bed.server.databaseHash() == Self.hash)
        // Read By Type of 0x2B2A (as a robust-caching client reads it) gives handle 0x000D.
        #expect(bed.request("08 0100 FFFF 2A2B") == [0x09, 0x12, 0x0D, 0x00] + Self.hash)
    }

    /// The layout the hash covers: the include declaration and the Extended Properties descriptor.
    @Test func exampleDatabaseLayout() {
        let bed = ServerBed(Self.example)
        #expect(bed.request("0A 0F00") == hex("0B 1400 1600 0F18"))
        #expect(bed.request("0A 1000") == hex("0B A2 1100 182A"))
        #expect(bed.request("04 1200 1300") == hex("05 01 1200 0229 1300 0029"))
        #expect(bed.request("10 0100 FFFF 0128") == hex("11 06 1400 1600 0F18"))
    }

    /// Values are not part of the hash; a new characteristic is.
    @Test func hashFollowsStructureOnly() async {
        var changedValue = Self.example
        changedValue.services[3].characteristics[0].value = [0x55]
        #expect(await ServerBed(changedValue).server.databaseHash() == Self.hash)
        var added = Self.example
        added.services[3].characteristics.append(.init(uuid: Self.u(0x2A1A), properties: [.read]))
        #expect(await ServerBed(added).server.databaseHash() != Self.hash)
    }
}
