import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

@Suite struct AdvertisingFilterTests {
    // Built from Supplement, Part A formats: Flags, 128-bit Heart Rate in a complete list,
    // a Battery service data entry, name "Polar H10 A1B2", Manufacturer 0x006B.
    static let hr128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0D, 0x18, 0x00, 0x00]
    static let bytes: [UInt8] = [0x02, 0x01, 0x06]
        + [0x11, 0x07] + hr128
        + [0x04, 0x16, 0x0F, 0x18, 0x64]
        + [0x0F, 0x09] + Array("Polar H10 A1B2".utf8)
        + [0x04, 0xFF, 0x6B, 0x00, 0x01]

    @Test func emptyFilterMatchesEverything() {
        #expect(ScanFilter().isEmpty)
        #expect(ScanFilter().matches(advertisingData: [], rssi: -127))
        #expect(ScanFilter.all.matches(advertisingData: [0xFF, 0x00], rssi: 0))
    }

    @Test func servicesMatchAcrossWidths() {
        #expect(ScanFilter(services: [BluetoothUUID("180D")!]).matches(advertisingData: Self.bytes, rssi: -50))
        #expect(ScanFilter(services: [BluetoothUUID("0000180D")!]).matches(advertisingData: Self.bytes, rssi: -50))
        #expect(ScanFilter(services: [BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!]).matches(advertisingData: Self.bytes, rssi: -50))
        #expect(!ScanFilter(services: [BluetoothUUID("1810")!]).matches(advertisingData: Self.bytes, rssi: -50))
        // Any of several.
        #expect(ScanFilter(services: [BluetoothUUID("1810")!, BluetoothUUID("180D")!]).matches(advertisingData: Self.bytes, rssi: -50))

        // A 128-bit filter matches a 16-bit list entry, and a 32-bit one.
        let list16: [UInt8] = [0x03, 0x03, 0x0D, 0x18]
        let list32: [UInt8] = [0x05, 0x05, 0x0D, 0x18, 0x00, 0x00]
        let full = ScanFilter(services: [BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!])
        #expect(full.matches(advertisingData: list16, rssi: 0))
        #expect(full.matches(advertisingData: list32, rssi: 0))
        // Vendor 128-bit UUIDs only match themselves.
        let nus = ScanFilter(services: [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])
        #expect(!nus.matches(advertisingData: list16, rssi: 0))
        #expect(nus.matches(advertisingData: [0x11, 0x06, 0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                                              0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E], rssi: 0))
        // A malformed (odd) list still matches its whole entries, and never reads past it.
        #expect(ScanFilter(services: [BluetoothUUID("180D")!]).matches(advertisingData: [0x04, 0x03, 0x0D, 0x18, 0x0F], rssi: 0))
        #expect(!ScanFilter(services: [BluetoothUUID("180F")!]).matches(advertisingData: [0x04, 0x03, 0x0D, 0x18, 0x0F], rssi: 0))
    }

    @Test func serviceDataUUIDsCount() {
        #expect(ScanFilter(services: [BluetoothUUID("180F")!]).matches(advertisingData: Self.bytes, rssi: 0))
        let sd32: [UInt8] = [0x06, 0x20, 0xEF, 0xBE, 0xAD, 0xDE, 0x01]
        #expect(ScanFilter(services: [BluetoothUUID("DEADBEEF")!]).matches(advertisingData: sd32, rssi: 0))
        // Solicitation UUIDs are not advertised services.
        #expect(!ScanFilter(services: [BluetoothUUID("1812")!]).matches(advertisingData: [0x03, 0x14, 0x12, 0x18], rssi: 0))
    }

    @Test func nameSubstringIgnoresCase() {
        #expect(ScanFilter(nameContains: "polar").matches(advertisingData: Self.bytes, rssi: 0))
        #expect(ScanFilter(nameContains: "H10 a1b2").matches(advertisingData: Self.bytes, rssi: 0))
        #expect(!ScanFilter(nameContains: "Wahoo").matches(advertisingData: Self.bytes, rssi: 0))
        #expect(!ScanFilter(nameContains: "Polar H10 A1B2 extra").matches(advertisingData: Self.bytes, rssi: 0))
        #expect(ScanFilter(nameContains: "pol").matches(advertisingData: [0x04, 0x08, 0x50, 0x4F, 0x4C], rssi: 0))
        #expect(!ScanFilter(nameContains: "pol").matches(advertisingData: [0x02, 0x01, 0x06], rssi: 0))
        #expect(ScanFilter(nameContains: "").isEmpty)
    }

    @Test func rssiThreshold() {
        let f = ScanFilter(minimumRSSI: -70)
        #expect(f.matches(advertisingData: Self.bytes, rssi: -70))
        #expect(f.matches(advertisingData: Self.bytes, rssi: -40))
        #expect(!f.matches(advertisingData: Self.bytes, rssi: -71))
    }

    @Test func manufacturerID() {
        #expect(ScanFilter(manufacturerID: 0x006B).matches(advertisingData: Self.bytes, rssi: 0))
        #expect(!ScanFilter(manufacturerID: 0x004C).matches(advertisingData: Self.bytes, rssi: 0))
        #expect(!ScanFilter(manufacturerID: 0x006B).matches(advertisingData: [0x02, 0xFF, 0x6B], rssi: 0))
    }

    @Test func allCriteriaMustHold() {
        let f = ScanFilter(services: [BluetoothUUID("180D")!], nameContains: "polar", minimumRSSI: -80, manufacturerID: 0x006B)
        #expect(f.matches(advertisingData: Self.bytes, rssi: -60))
        #expect(!f.matches(advertisingData: Self.bytes, rssi: -90))
        var g = f; g.nameContains = "garmin"
        #expect(!g.matches(advertisingData: Self.bytes, rssi: -60))
        var h = f; h.services = [BluetoothUUID("1816")!]
        #expect(!h.matches(advertisingData: Self.bytes, rssi: -60))
        #expect(f.matches(AdvertisingData(bytes: Self.bytes), rssi: -60))
        #expect(!h.matches(AdvertisingData(bytes: Self.bytes), rssi: -60))
    }

    @Test func truncatedStructureIsIgnored() {
        // The name's length runs past the end: it is not a name.
        #expect(!ScanFilter(nameContains: "ab").matches(advertisingData: [0x05, 0x09, 0x61, 0x62], rssi: 0))
    }

    /// The whole H4 packet of phlash__blefun.btsnoop record 131, an LE Advertising Report
    /// (Vol 4, Part E, 7.7.65.2): the filter reads the Data field in place by range.
    @Test func matchesInsideAnEventBuffer() throws {
        let h4 = try #require([UInt8](hex: "043e270201000045fd93f519001b0201061106615577678b3d32b4e04e8e53744d446105fff902fd459e"))
        let dataRange = 14..<(14 + Int(h4[13]))
        let rssi = Int8(bitPattern: h4[dataRange.upperBound])
        #expect(rssi == -98)
        h4.withUnsafeBytes { raw in
            #expect(ScanFilter(manufacturerID: 0x02F9).matches(advertisingData: raw, range: dataRange, rssi: rssi))
            #expect(ScanFilter(services: [BluetoothUUID("61444D74-538E-4EE0-B432-3D8B67775561")!])
                .matches(advertisingData: raw, range: dataRange, rssi: rssi))
            #expect(!ScanFilter(minimumRSSI: -90, manufacturerID: 0x02F9).matches(advertisingData: raw, range: dataRange, rssi: rssi))
        }
    }
}
