import Testing
import BLETestSupport
import GATTServer
import BLEWire

/// `GATTDatabase(tree:)`: the database of `ble serve DB.yaml|DB.json`.
struct DatabaseFileTests {
    static func characteristic(_ members: [(String, JSONValue)]) -> JSONValue {
        .object([("services", .array([.object([("uuid", .string("180F")), ("characteristics", .array([.object(members)]))])]))])
    }

    /// Properties named as `ble inspect --json` names them, permissions from the properties,
    /// a text value and a `hex:` value.
    @Test func readsServicesAndCharacteristics() throws {
        let tree = JSONValue.object([
            ("deviceName", .string("Provisioner")),
            ("services", .array([
                .object([("uuid", .int(1809)), ("characteristics", .array([
                    .object([("uuid", .string("2A19")), ("properties", .array([.string("read"), .string("notify")])), ("value", .string("hex:64"))]),
                    .object([("uuid", .string("2A00")), ("properties", .array([.string("read"), .string("write")])),
                             ("permissions", .array([.string("readEncrypted"), .string("writeEncrypted")])), ("value", .string("ab")),
                             ("description", .string("Name"))]),
                ]))]),
            ])),
        ])
        let db = try GATTDatabase(tree: tree)
        #expect(db.deviceName == "Provisioner")
        #expect(db.services[0].uuid == BluetoothUUID(uuid16: 0x1809))
        let level = db.services[0].characteristics[0]
        #expect(level.properties == [.read, .notify] && level.permissions == [.read] && level.value == [0x64])
        let name = db.services[0].characteristics[1]
        #expect(name.permissions == [.readEncrypted, .writeEncrypted] && name.value == [0x61, 0x62])
        #expect(name.descriptors.map(\.value) == [Array("Name".utf8)])
    }

    @Test func badInputNamesWhere() {
        #expect(throws: GATTDatabaseFileError(path: "services", problem: "missing, or not a list")) { try GATTDatabase(tree: .object([])) }
        #expect(throws: GATTDatabaseFileError(path: "services[0].characteristics[0].properties",
                                              problem: "unknown property 'reed' (one of authenticatedSignedWrites, broadcast, extendedProperties, indicate, notify, read, write, writeWithoutResponse)")) {
            try GATTDatabase(tree: Self.characteristic([("uuid", .string("2A19")), ("properties", .array([.string("reed")]))]))
        }
        #expect(throws: GATTDatabaseFileError(path: "services[0].characteristics[0].value", problem: "'hex:6' is not hex")) {
            try GATTDatabase(tree: Self.characteristic([("uuid", .string("2A19")), ("value", .string("hex:6"))]))
        }
        #expect(throws: GATTDatabaseFileError(path: "services[0].characteristics[0].uuid", problem: "missing")) {
            try GATTDatabase(tree: Self.characteristic([("value", .string("x"))]))
        }
        #expect(throws: GATTDatabaseFileError(path: "services[0].characteristics[0].value", problem: "513 octets, longer than the 512 allowed")) {
            try GATTDatabase(tree: Self.characteristic([("uuid", .string("2A19")), ("value", .string(String(repeating: "x", count: 513)))]))
        }
        // A misspelt key is named, not ignored (the characteristic would have no properties).
        #expect(throws: GATTDatabaseFileError(path: "services[0].characteristics[0].propertes",
                                              problem: "unknown key (one of description, maximumLength, permissions, properties, uuid, value)")) {
            try GATTDatabase(tree: Self.characteristic([("uuid", .string("2A19")), ("propertes", .array([.string("read")]))]))
        }
        #expect(throws: GATTDatabaseFileError(path: "service", problem: "unknown key (one of appearance, deviceName, robustCaching, services)")) {
            try GATTDatabase(tree: .object([("service", .array([]))]))
        }
    }
}
