import BLETestSupport
import Foundation
import Testing

/// `ble scan` shows service data (UUID and hex), decoded Eddystone and iBeacon frames and the
/// advertised TX Power Level (AD type 0x0A) in its lines and JSON. Two Bumble peers on the
/// virtual radio advertise bytes written here from the formats:
/// - an Eddystone-URL frame (Eddystone protocol specification, URL frame: type 0x10, TX power
///   at 0 m 0xE8 = -24 dBm, scheme 0x03 "https://", "example", expansion 0x07 ".com") as
///   Service Data for FEAA, with TX Power Level 4 dBm;
/// - an iBeacon (Apple company 0x004C; 0x02 0x15, proximity UUID, major 1, minor 2 big-endian,
///   measured power 0xC5 = -59 dBm) in Manufacturer Specific Data.
@Suite(.serialized) struct CLIScanDataTests {
    static let eddystone = "F0:5E:B1:00:00:21"
    static let ibeacon = "F0:5E:B1:00:00:22"

    static func scenario() throws -> String {
        let devices: [[String: Any]] = [
            ["id": "eddystone", "name": "Eddy", "address": eddystone,
             "advertising": ["intervalMs": 50, "serviceUUIDs": ["FEAA"], "txPower": 4,
                             "serviceData": [["uuid": "FEAA", "data": "10e803" + "6578616d706c65" + "07"]]]],
            ["id": "ibeacon", "name": "Bcn", "address": ibeacon,
             "advertising": ["intervalMs": 50, "connectable": false,
                             "manufacturerData": ["companyId": 76, "data": "0215" + "e2c56db5dffb48d2b060d0f5a71096e0" + "0001" + "0002" + "c5"]]],
        ]
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("beacons-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: ["devices": devices]).write(to: url)
        return url.path
    }

    @Test func linesAndJSONShowServiceDataBeaconsAndTxPower() async throws {
        try await VirtualRadio.with(scenario: try Self.scenario()) { radio in
            let run = try await BLETool.run(["-d", radio.transportSpec, "scan", "--duration", "2"])
            #expect(run.status == 0, "\(run.stderr)")
            let eddy = run.stdoutLines.last { $0.contains(Self.eddystone) } ?? ""
            #expect(eddy.contains("tx power 4 dBm"), "\(eddy)")
            #expect(eddy.contains("Eddystone-URL https://example.com tx@0m -24 dBm"), "\(eddy)")
            #expect(eddy.contains("service data FEAA 10e8036578616d706c6507"), "\(eddy)")
            let beacon = run.stdoutLines.last { $0.contains(Self.ibeacon) } ?? ""
            #expect(beacon.contains("iBeacon E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 major 1 minor 2 tx@1m -59 dBm"), "\(beacon)")
            #expect(!beacon.contains("tx power"))

            let json = try BLETool.jsonLines(try await BLETool.run(["-d", radio.transportSpec, "scan", "--json", "--duration", "2"]))
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
}
