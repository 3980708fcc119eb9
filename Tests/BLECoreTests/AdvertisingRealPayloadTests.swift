import Foundation
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Advertising data taken from LE Advertising Report (0x3E/0x02) and LE Extended Advertising
/// Report (0x3E/0x0D) events in the real captures; provenance of every row in
/// Fixtures/advertising/README.md. Expected values are read off the bytes by the formats of
/// the Core Specification Supplement, Part A.
@Suite struct AdvertisingRealPayloadTests {
    struct Row { var capture: String; var record: Int; var rssi: Int8; var data: [UInt8] }

    static func rows() throws -> [Row] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/advertising/real-payloads.tsv")
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 7, let record = Int(f[1]), let rssi = Int8(f[5]), let data = [UInt8](hex: f[6]) else { return nil }
            return Row(capture: f[0], record: record, rssi: rssi, data: data)
        }
    }

    static func payload(_ capture: String, _ record: Int) throws -> AdvertisingData {
        let row = try #require(try rows().first { $0.capture == capture && $0.record == record })
        return AdvertisingData(bytes: row.data)
    }

    @Test func everyRealPayloadDecodesWithoutErrorsAndRoundTrips() throws {
        let rows = try Self.rows()
        #expect(rows.count == 89)
        for row in rows {
            let ad = AdvertisingData(bytes: row.data)
            #expect(ad.bytes == row.data, "\(row.capture) record \(row.record)")
            for s in ad.structures {
                if case .malformed = s { Issue.record("\(row.capture) record \(row.record): \(s)") }
            }
            // The in-place walk sees the same structures, in the same order.
            var types: [UInt8] = []
            row.data.withUnsafeBytes { raw in AdvertisingData.forEachStructure(in: raw) { t, _ in types.append(t); return true } }
            #expect(types == ad.structures.map(\.type))
        }
    }

    @Test func iBeacon() throws {
        // cnrd__yeelock.btsnoop record 352: Flags, Manufacturer Specific Data 0x004C (Apple)
        // carrying an iBeacon frame (0x02 0x15, proximity UUID, major, minor, measured power).
        let ad = try Self.payload("cnrd__yeelock.btsnoop", 352)
        #expect(ad.flags == [.leGeneralDiscoverable, .brEDRNotSupported])
        let m = try #require(ad.manufacturerData.first)
        #expect(m.companyID == 0x004C)
        #expect(Array(m.data.prefix(2)) == [0x02, 0x15])
        #expect(m.data.count == 23)
        #expect(ScanFilter(manufacturerID: 0x004C).matches(ad, rssi: -74))
    }

    @Test func vendor128BitListAndName() throws {
        // cnrd__yeelock.btsnoop record 353 (scan response): Complete List of 128-bit Service
        // UUIDs with one vendor UUID, Complete Local Name "RDL51822".
        let ad = try Self.payload("cnrd__yeelock.btsnoop", 353)
        #expect(ad.serviceUUIDs == [BluetoothUUID("00001803-494C-4F47-4943-544543480000")!])
        #expect(ad.localName == "RDL51822")
        #expect(ad.isNameComplete)
    }

    @Test func tileServiceData() throws {
        // csacca__horizon-74-at-ble.btsnoop record 202: Flags, Complete List of 16-bit UUIDs
        // [0xFEED], Service Data for 0xFEED.
        let ad = try Self.payload("csacca__horizon-74-at-ble.btsnoop", 202)
        #expect(ad.serviceUUIDs == [BluetoothUUID("FEED")!])
        #expect(ad.serviceData[BluetoothUUID("FEED")!] == [0x02, 0x00, 0xDA, 0xE6, 0x57, 0x96, 0x29, 0xD9, 0x1F, 0x12])
        #expect(ScanFilter(services: [BluetoothUUID("0000FEED-0000-1000-8000-00805F9B34FB")!]).matches(ad, rssi: -70))
    }

    @Test func connectionIntervalRangeAndTxPower() throws {
        // csacca__horizon-74-at-ble.btsnoop record 182: name "HPA8350B", Peripheral Connection
        // Interval Range 0x0050..0x0960, TX Power Level 0 dBm.
        let ad = try Self.payload("csacca__horizon-74-at-ble.btsnoop", 182)
        #expect(ad.structures == [.completeLocalName("HPA8350B"),
                                  .peripheralConnectionIntervalRange(min: 0x0050, max: 0x0960),
                                  .txPowerLevel(0)])
    }

    @Test func shortenedName() throws {
        // csacca__horizon-74-at-ble.btsnoop record 436: a 26-byte Shortened Local Name.
        let ad = try Self.payload("csacca__horizon-74-at-ble.btsnoop", 436)
        #expect(ad.localName == "[TV] Samsung 7 Series (58)")
        #expect(!ad.isNameComplete)
        #expect(ScanFilter(nameContains: "samsung").matches(ad, rssi: -94))
    }

    @Test func deviceAddressWithReservedBitsIsKept() throws {
        // crossnite__NovaX-Escooter.btsnoop record 1060 (extended report): Flags 0x1A,
        // Manufacturer 0x00C4, TX Power -44 dBm, 16-bit list [0xFEB9], and an LE Bluetooth Device
        // Address whose type octet is 0x60 (reserved bits set; bit 0 clear: public).
        let ad = try Self.payload("crossnite__NovaX-Escooter.btsnoop", 1060)
        #expect(ad.flags == [.leGeneralDiscoverable, .simultaneousLEAndBREDRController, .previouslyUsed])
        #expect(ad.manufacturerData.map(\.companyID) == [0x00C4])
        #expect(ad.txPowerLevel == -44)
        #expect(ad.serviceUUIDs == [BluetoothUUID("FEB9")!])
        #expect(ad.structures.last == .leBluetoothDeviceAddress(BluetoothAddress("8D:26:0C:32:87:00")!, typeOctet: 0x60))
    }

    @Test func extendedPayloadLongerThanLegacy() throws {
        // crossnite__NovaX-Escooter.btsnoop record 466: one 94-byte Service Data structure
        // (UUID 0xFEF3) in an extended advertising report.
        let ad = try Self.payload("crossnite__NovaX-Escooter.btsnoop", 466)
        #expect(ad.structures.count == 1)
        #expect(ad.serviceData[BluetoothUUID("FEF3")!]?.count == 92)
        #expect(ad.bytes.count == 96)
    }

    @Test func filterAgreesWithDecodedDataOnEveryRealPayload() throws {
        let filters = [
            ScanFilter(services: [BluetoothUUID("FEED")!]),
            ScanFilter(services: [BluetoothUUID("FEF3")!, BluetoothUUID("FFE0")!]),
            ScanFilter(nameContains: "scale"),
            ScanFilter(manufacturerID: 0x004C),
            ScanFilter(minimumRSSI: -80),
        ]
        for row in try Self.rows() {
            let ad = AdvertisingData(bytes: row.data)
            let names = [ad.localName].compactMap { $0 } + ad.structures.compactMap {
                if case .shortenedLocalName(let n) = $0 { return n } else { return nil }
            }
            let expected: [Bool] = [
                ad.serviceUUIDs.contains(BluetoothUUID("FEED")!) || ad.serviceData[BluetoothUUID("FEED")!] != nil,
                [BluetoothUUID("FEF3")!, BluetoothUUID("FFE0")!].contains { ad.serviceUUIDs.contains($0) || ad.serviceData[$0] != nil },
                names.contains { $0.lowercased().contains("scale") },
                ad.manufacturerData.contains { $0.companyID == 0x004C },
                row.rssi >= -80,
            ]
            for (f, e) in zip(filters, expected) {
                #expect(f.matches(advertisingData: row.data, rssi: row.rssi) == e, "\(row.capture) \(row.record)")
            }
        }
    }
}
