import BLECore
import BLEGateway
import BLESensors
import Foundation
import Testing
import BLEWire

/// The `keys` of the gateway config: bindkeys by address, checked, never shown.
@Suite struct SensorKeysConfigTests {
    static func decode(_ json: String) throws(ConfigError) -> GatewayConfig {
        try GatewayConfig.decode(Data(json.utf8))
    }

    @Test func keysAreReadByAddress() throws {
        let c = try Self.decode(#"{"keys": {"A4:C1:38:00:00:01": "231d39c1d7cc1ab1aee224cd096db932", "54:48:e6:8f:80:a5": "814AAC74C4F17B6C1581E1AB87816B99"}}"#)
        #expect(c.keys[BluetoothAddress("A4:C1:38:00:00:01")!] == [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32])
        #expect(c.keys.keys.count == 2)
        // Printing the config shows how many keys there are, never a key.
        #expect(!"\(c)".lowercased().contains("231d39") && !String(reflecting: c).lowercased().contains("231d39"))
    }

    @Test(arguments: [
        (#"{"keys": {"A4:C1:38:00:00:01": "231d39c1d7cc1ab1aee224cd096db9"}}"#,
         "config: keys.A4:C1:38:00:00:01: the key of A4:C1:38:00:00:01 must be 16 bytes written as 32 hex digits"),
        (#"{"keys": {"A4:C1:38:00:00:01": "231d39c1d7cc1ab1aee224cd096db93200"}}"#,
         "config: keys.A4:C1:38:00:00:01: the key of A4:C1:38:00:00:01 must be 16 bytes written as 32 hex digits"),
        (#"{"keys": {"A4:C1:38:00:00:01": "not hex at all, not hex at all!!"}}"#,
         "config: keys.A4:C1:38:00:00:01: the key of A4:C1:38:00:00:01 must be 16 bytes written as 32 hex digits"),
        (#"{"keys": {"sensor": "231d39c1d7cc1ab1aee224cd096db932"}}"#,
         "config: keys.sensor: is not an address like A4:C1:38:00:00:01"),
        (#"{"keys": {"a4:c1:38:00:00:01": "231d39c1d7cc1ab1aee224cd096db932", "A4:C1:38:00:00:01": "231d39c1d7cc1ab1aee224cd096db932"}}"#,
         "config: keys.a4:c1:38:00:00:01: A4:C1:38:00:00:01 has two keys"),
    ])
    func aBadKeyIsAnErrorNamingTheDeviceNotTheKey(_ json: String, _ message: String) {
        do {
            _ = try Self.decode(json)
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description == message)
        }
    }
}
