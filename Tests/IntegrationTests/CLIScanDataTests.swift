import BLETestSupport
import Foundation
import Testing
import BLEWire

/// `ble scan` shows service data (UUID and hex), decoded Eddystone and iBeacon frames and the
/// advertised TX Power Level (AD type 0x0A) in its lines and JSON. Two fakes advertise bytes
/// written here from the formats (AD structures: length, type, data; Core Specification
/// Supplement, Part A, 1.1 service UUIDs, 1.2 local name, 1.3 flags, 1.4 manufacturer data,
/// 1.5 TX power level, 1.11 service data; type codes from Assigned Numbers 2.3):
/// - an Eddystone-URL frame (Eddystone protocol specification, URL frame: type 0x10, TX power
///   at 0 m 0xE8 = -24 dBm, scheme 0x03 "https://", "example", expansion 0x07 ".com") as
///   Service Data for FEAA, with TX Power Level 4 dBm;
/// - an iBeacon (Apple company 0x004C; 0x02 0x15, proximity UUID, major 1, minor 2 big-endian,
///   measured power 0xC5 = -59 dBm) in Manufacturer Specific Data, not connectable.
@Suite(.serialized) struct CLIScanDataTests {
    static let eddystone = "F0:5E:B1:00:00:21"
    static let ibeacon = "F0:5E:B1:00:00:22"

    static func devices() -> [FakePeripheral] {
        let flags: [UInt8] = [0x02, 0x01, 0x06]   // LE General Discoverable, BR/EDR not supported
        let eddy = flags
            + [0x03, 0x03, 0xAA, 0xFE]                                  // complete 16-bit UUIDs: FEAA
            + [0x02, 0x0A, 0x04]                                        // TX Power Level 4 dBm
            + [0x0E, 0x16, 0xAA, 0xFE, 0x10, 0xE8, 0x03]                // service data FEAA: URL frame, -24 dBm, https://
            + Array("example".utf8) + [0x07]                            // "example" ".com"
            + [0x05, 0x09] + Array("Eddy".utf8)                         // complete local name
        let beacon = flags
            + [0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15]                      // Apple (0x004C, little-endian), iBeacon type and length
            + [0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0]
            + [0x00, 0x01, 0x00, 0x02, 0xC5]                            // major 1, minor 2, measured power -59 dBm
        return [
            FakePeripheral(name: "Eddy", address: FakePeers.address(eddystone), advertisement: AdvertisingData(bytes: eddy)),
            FakePeripheral(name: "Bcn", address: FakePeers.address(ibeacon), advertisement: AdvertisingData(bytes: beacon), isConnectable: false),
        ]
    }

    @Test func linesAndJSONShowServiceDataBeaconsAndTxPower() async throws {
        let radio = FakeRadio(Self.devices())
        defer { radio.close() }
        let run = try await radio.run(["scan", "--duration", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        let eddy = run.stdoutLines.last { $0.contains(Self.eddystone) } ?? ""
        #expect(eddy.contains("tx power 4 dBm"), "\(eddy)")
        #expect(eddy.contains("Eddystone-URL https://example.com tx@0m -24 dBm"), "\(eddy)")
        #expect(eddy.contains("service data FEAA 10e8036578616d706c6507"), "\(eddy)")
        let beacon = run.stdoutLines.last { $0.contains(Self.ibeacon) } ?? ""
        #expect(beacon.contains("iBeacon E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 major 1 minor 2 tx@1m -59 dBm"), "\(beacon)")
        #expect(!beacon.contains("tx power"))

        let json = try BLETool.jsonLines(try await radio.run(["scan", "--json", "--duration", "1"]))
        let e = try #require(json.last { $0["address"] as? String == Self.eddystone })
        #expect(e["txPower"] as? Int == 4)
        let data = try #require(e["serviceData"] as? [[String: Any]])
        #expect(data.count == 1)
        #expect(data.first?["uuid"] as? String == "FEAA")
        #expect(data.first?["data"] as? String == "10e8036578616d706c6507")
        let eb = try #require((e["beacons"] as? [[String: Any]])?.first)
        #expect(eb["type"] as? String == "eddystone-url")
        #expect(eb["url"] as? String == "https://example.com")
        #expect(eb["txPowerAt0m"] as? Int == -24)

        let i = try #require(json.last { $0["address"] as? String == Self.ibeacon })
        #expect(i["txPower"] is NSNull)
        let ib = try #require((i["beacons"] as? [[String: Any]])?.first)
        #expect(ib["type"] as? String == "ibeacon")
        #expect(ib["uuid"] as? String == "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
        #expect(ib["major"] as? Int == 1)
        #expect(ib["minor"] as? Int == 2)
        #expect(ib["measuredPower"] as? Int == -59)
    }
}
