import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// AD structure formats: Core Specification Supplement, Part A, 1; the structure layout
/// (length, AD type, data): Core Specification Vol 3, Part C, 11. Type codes: Assigned
/// Numbers 2.3. Each vector below is written from those formats by hand.
@Suite struct AdvertisingDataTests {
    static let vectors: [([UInt8], ADStructure)] = [
        // 1.3 Flags: LE General Discoverable (bit 1) + BR/EDR Not Supported (bit 2).
        ([0x02, 0x01, 0x06], .flags([.leGeneralDiscoverable, .brEDRNotSupported])),
        // 1.1 Service UUID lists, little-endian: Heart Rate 0x180D, Battery 0x180F.
        ([0x05, 0x02, 0x0D, 0x18, 0x0F, 0x18], .incompleteServiceUUIDs16([0x180D, 0x180F])),
        ([0x03, 0x03, 0x0D, 0x18], .completeServiceUUIDs16([0x180D])),
        ([0x05, 0x04, 0x78, 0x56, 0x34, 0x12], .incompleteServiceUUIDs32([0x1234_5678])),
        ([0x05, 0x05, 0x0D, 0x18, 0x00, 0x00], .completeServiceUUIDs32([0x0000_180D])),
        ([0x11, 0x06] + uuid128LE, .incompleteServiceUUIDs128([nordicUART])),
        ([0x11, 0x07] + uuid128LE, .completeServiceUUIDs128([nordicUART])),
        // 1.2 Local Name, UTF-8.
        ([0x04, 0x08, 0x48, 0x52, 0x4D], .shortenedLocalName("HRM")),
        ([0x07, 0x09, 0x48, 0x52, 0x4D, 0x20, 0xC3, 0xA9], .completeLocalName("HRM \u{E9}")),
        // 1.5 TX Power Level, signed dBm.
        ([0x02, 0x0A, 0xF4], .txPowerLevel(-12)),
        // 1.4 Manufacturer Specific Data: company 0x004C, then vendor bytes.
        ([0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15], .manufacturerSpecificData(companyID: 0x004C, data: [0x02, 0x15])),
        ([0x03, 0xFF, 0x59, 0x00], .manufacturerSpecificData(companyID: 0x0059, data: [])),
        // 1.11 Service Data: UUID then data. Battery Level 0x64 = 100 % under 0x180F.
        ([0x04, 0x16, 0x0F, 0x18, 0x64], .serviceData16(uuid: 0x180F, data: [0x64])),
        ([0x06, 0x20, 0x0F, 0x18, 0x00, 0x00, 0x64], .serviceData32(uuid: 0x0000_180F, data: [0x64])),
        ([0x12, 0x21] + uuid128LE + [0x01], .serviceData128(uuid: nordicUART, data: [0x01])),
        // 1.12 Appearance: 0x0341 Heart Rate Sensor / Heart Rate Belt.
        ([0x03, 0x19, 0x41, 0x03], .appearance(0x0341)),
        // 1.9 Peripheral Connection Interval Range: 7.5 ms (0x0006) to 4 s (0x0C80).
        ([0x05, 0x12, 0x06, 0x00, 0x80, 0x0C], .peripheralConnectionIntervalRange(min: 0x0006, max: 0x0C80)),
        // 1.10 Service Solicitation.
        ([0x03, 0x14, 0x12, 0x18], .serviceSolicitationUUIDs16([0x1812])),
        ([0x05, 0x1F, 0x12, 0x18, 0x00, 0x00], .serviceSolicitationUUIDs32([0x0000_1812])),
        ([0x11, 0x15] + uuid128LE, .serviceSolicitationUUIDs128([nordicUART])),
        // 1.13 / 1.14 Target addresses, 6 octets each, little-endian.
        ([0x07, 0x17, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11], .publicTargetAddress([BluetoothAddress(rawValue: 0x1122_3344_5566)])),
        ([0x0D, 0x18, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1, 0x01, 0x02, 0x03, 0x04, 0x05, 0xC6],
         .randomTargetAddress([BluetoothAddress(rawValue: 0xC122_3344_5566), BluetoothAddress(rawValue: 0xC605_0403_0201)])),
        // 1.15 Advertising Interval: 0x0800 * 0.625 ms = 1.28 s; long form 4 octets.
        ([0x03, 0x1A, 0x00, 0x08], .advertisingInterval(0x0800)),
        ([0x05, 0x2F, 0x00, 0x00, 0x01, 0x00], .longAdvertisingInterval(0x0001_0000)),
        // 1.16 LE Bluetooth Device Address: address then type octet (bit 0: random).
        ([0x08, 0x1B, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1, 0x01],
         .leBluetoothDeviceAddress(BluetoothAddress(rawValue: 0xC122_3344_5566), typeOctet: 0x01)),
        // 1.17 LE Role: 0x02 peripheral preferred.
        ([0x02, 0x1C, 0x02], .leRole(0x02)),
        // 1.18 URI: scheme code U+0017 "https:" then "//a.b".
        ([0x07, 0x24, 0x17, 0x2F, 0x2F, 0x61, 0x2E, 0x62], .uri("\u{17}//a.b")),
        // 1.19 LE Supported Features: bit 0 (LE Encryption) and bit 5 (Data Length Extension).
        ([0x02, 0x27, 0x21], .leSupportedFeatures([0x21])),
        // 0x0D Class of Device is not interpreted: kept raw.
        ([0x04, 0x0D, 0x04, 0x04, 0x24], .raw(type: 0x0D, data: [0x04, 0x04, 0x24])),
    ]

    /// 6E400001-B5A3-F393-E0A9-E50E24DCCA9E (Nordic UART Service), and its little-endian bytes.
    static let nordicUART: UInt128 = 0x6E40_0001_B5A3_F393_E0A9_E50E_24DC_CA9E
    static let uuid128LE: [UInt8] = [0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                                     0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E]

    @Test(arguments: vectors.indices)
    func eachTypeRoundTrips(_ i: Int) {
        let (bytes, expected) = Self.vectors[i]
        let decoded = AdvertisingData(bytes: bytes)
        #expect(decoded.structures == [expected])
        #expect(expected.encoded == bytes)
        #expect(decoded.bytes == bytes)
        #expect(expected.type == bytes[1])
    }

    /// Advertising Interval (1.15): 0x0020 units of 0.625 ms; the 4-octet form 0x00000640;
    /// Peripheral Connection Interval Range (1.9): 0x0006 and 0x0C80 units of 1.25 ms, and
    /// 0xFFFF for no specific maximum.
    @Test func intervalsAreDurations() {
        #expect(AdvertisingData(bytes: [0x03, 0x1A, 0x20, 0x00]).advertisingInterval == .milliseconds(20))
        #expect(AdvertisingData(bytes: [0x05, 0x2F, 0x40, 0x06, 0x00, 0x00]).advertisingInterval == .seconds(1))
        let range = AdvertisingData(bytes: [0x05, 0x12, 0x06, 0x00, 0x80, 0x0C]).peripheralConnectionIntervalRange
        #expect(range?.minimum == .microseconds(7_500) && range?.maximum == .seconds(4))
        let open = AdvertisingData(bytes: [0x05, 0x12, 0x06, 0x00, 0xFF, 0xFF]).peripheralConnectionIntervalRange
        #expect(open?.minimum == .microseconds(7_500) && open?.maximum == nil)
        #expect(AdvertisingData(bytes: [0x02, 0x01, 0x06]).advertisingInterval == nil)
    }

    @Test func allTypesInOneBufferRoundTrip() {
        let bytes = Self.vectors.flatMap(\.0)
        let ad = AdvertisingData(bytes: bytes)
        #expect(ad.structures == Self.vectors.map(\.1))
        #expect(ad.bytes == bytes)
    }

    @Test func malformedPayloadsOfKnownTypes() {
        let cases: [[UInt8]] = [
            [0x04, 0x03, 0x0D, 0x18, 0x0F],          // 16-bit list, odd length
            [0x04, 0x05, 0x0D, 0x18, 0x00],          // 32-bit list, 3 bytes
            [0x03, 0x07, 0x01, 0x02],                // 128-bit list, 2 bytes
            [0x03, 0x01, 0x06, 0x00],                // Flags, 2 bytes
            [0x01, 0x0A],                            // TX Power, empty
            [0x02, 0xFF, 0x4C],                      // Manufacturer data without full company ID
            [0x02, 0x19, 0x41],                      // Appearance, 1 byte
            [0x04, 0x12, 0x06, 0x00, 0x80],          // Connection interval range, 3 bytes
            [0x04, 0x17, 0x01, 0x02, 0x03],          // Target address, 3 bytes
            [0x03, 0x09, 0xC3, 0x28],                // Name, invalid UTF-8
            [0x02, 0x21, 0x00],                      // Service data 128 without UUID
        ]
        for bytes in cases {
            let ad = AdvertisingData(bytes: bytes)
            guard case .malformed(let type, let data, let reason)? = ad.structures.first, ad.structures.count == 1 else {
                Issue.record("expected one malformed structure for \(bytes.hexString())"); continue
            }
            #expect(type == bytes[1])
            #expect(data == Array(bytes[2...]))
            #expect(!reason.isEmpty)
            #expect(ad.bytes == bytes)  // malformed structures keep their bytes
        }
    }

    /// A real report (phlash__blefun.btsnoop record 131) with a malformed 16-bit UUID list
    /// spliced in after the Flags: everything around it still decodes.
    @Test func malformedStructureInsideRealReport() throws {
        let real = try #require([UInt8](hex: "0201061106615577678b3d32b4e04e8e53744d446105fff902fd45"))
        let bad: [UInt8] = [0x04, 0x03, 0x0D, 0x18, 0x0F]
        let bytes = Array(real[0..<3]) + bad + Array(real[3...])
        let ad = AdvertisingData(bytes: bytes)
        #expect(ad.structures.count == 4)
        #expect(ad.flags == [.leGeneralDiscoverable, .brEDRNotSupported])
        if case .malformed(0x03, [0x0D, 0x18, 0x0F], _) = ad.structures[1] {} else { Issue.record("\(ad.structures[1])") }
        #expect(ad.serviceUUIDs == [BluetoothUUID("61444D74-538E-4EE0-B432-3D8B67775561")!])
        #expect(ad.manufacturerData == [ManufacturerSpecificData(companyID: 0x02F9, data: [0xFD, 0x45])])
        #expect(ad.bytes == bytes)
    }

    @Test func lengthRunningPastTheEnd() {
        // Name structure declares 5 bytes (type + 4) but only type + 2 follow.
        let ad = AdvertisingData(bytes: [0x02, 0x01, 0x06, 0x05, 0x09, 0x41, 0x42])
        #expect(ad.structures.count == 2)
        #expect(ad.structures[0] == .flags([.leGeneralDiscoverable, .brEDRNotSupported]))
        guard case .malformed(0x09, [0x41, 0x42], let reason) = ad.structures[1] else {
            Issue.record("\(ad.structures[1])"); return
        }
        #expect(reason.contains("5"))
        #expect(ad.localName == nil)

        // A lone length octet with no type.
        let lone = AdvertisingData(bytes: [0x02, 0x01, 0x06, 0x1F])
        #expect(lone.structures.count == 2)
        if case .malformed(_, [], _) = lone.structures[1] {} else { Issue.record("\(lone.structures[1])") }

        // Length 0xFF over a 2-byte buffer.
        #expect(AdvertisingData(bytes: [0xFF, 0xFF]).structures.count == 1)
        #expect(AdvertisingData(bytes: []).structures.isEmpty)
    }

    @Test func zeroLengthEndsSignificantData() {
        // Vol 3, Part C, 11: a zero length octet ends the significant part; the rest is padding.
        let ad = AdvertisingData(bytes: [0x02, 0x01, 0x06, 0x00, 0x03, 0x09, 0x41, 0x42, 0x00, 0x00])
        #expect(ad.structures == [.flags([.leGeneralDiscoverable, .brEDRNotSupported])])
        #expect(ad.bytes == [0x02, 0x01, 0x06])
    }

    @Test func iteratorWalksInPlaceAndSkipsTruncatedTail() {
        let bytes: [UInt8] = [0xAA, 0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x05, 0x09, 0x41]
        var seen: [ADStructureSpan] = []
        bytes.withUnsafeBytes { raw in
            var it = ADStructureIterator(raw, range: 1..<bytes.count)
            while let s = it.next() { seen.append(s) }
        }
        #expect(seen == [ADStructureSpan(type: 0x01, payload: 3..<4), ADStructureSpan(type: 0x03, payload: 6..<8)])

        var types: [UInt8] = []
        bytes.withUnsafeBytes { raw in
            AdvertisingData.forEachStructure(in: raw, range: 1..<bytes.count) { type, _ in types.append(type); return false }
        }
        #expect(types == [0x01])  // returning false stops the walk

        // Ranges outside the buffer are clamped, never read out of bounds.
        bytes.withUnsafeBytes { raw in
            var it = ADStructureIterator(raw, range: 50..<90)
            #expect(it.next() == nil)
        }
    }

    @Test func accessors() {
        let ad = AdvertisingData([
            .shortenedLocalName("HR"),
            .completeServiceUUIDs16([0x180D]),
            .incompleteServiceUUIDs128([Self.nordicUART]),
            .completeServiceUUIDs32([0x0000_180D]),  // same UUID in another width: listed once
            .serviceData16(uuid: 0x180F, data: [0x64]),
            .manufacturerSpecificData(companyID: 0x004C, data: [1]),
            .manufacturerSpecificData(companyID: 0x0006, data: [2]),
            .txPowerLevel(4),
            .appearance(0x0341),
            .completeLocalName("HR Belt"),
        ])
        #expect(ad.localName == "HR Belt")
        #expect(ad.isNameComplete)
        #expect(AdvertisingData([.shortenedLocalName("HR")]).localName == "HR")
        #expect(!AdvertisingData([.shortenedLocalName("HR")]).isNameComplete)
        #expect(ad.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D), BluetoothUUID(uuid128: Self.nordicUART)])
        #expect(ad.serviceData == [BluetoothUUID("180F")!: [0x64]])
        #expect(ad.manufacturerData.map(\.companyID) == [0x004C, 0x0006])
        #expect(ad.txPowerLevel == 4)
        #expect(ad.appearance == 0x0341)
        #expect(ad.flags == nil)
    }

    /// phlash__blefun.btsnoop: record 131 is the ADV_IND, record 134 the SCAN_RSP of the same
    /// device (00:19:F5:93:FD:45).
    @Test func mergingScanResponse() throws {
        let adv = AdvertisingData(bytes: try #require([UInt8](hex: "0201061106615577678b3d32b4e04e8e53744d446105fff902fd45")))
        let rsp = AdvertisingData(bytes: try #require([UInt8](hex: "03198001020afe13094869676877617920636f6e74726f6c6c6572")))
        let merged = adv.merging(rsp)
        #expect(merged.flags == [.leGeneralDiscoverable, .brEDRNotSupported])
        #expect(merged.localName == "Highway controller")
        #expect(merged.appearance == 0x0180)
        #expect(merged.txPowerLevel == -2)
        #expect(merged.manufacturerData == [ManufacturerSpecificData(companyID: 0x02F9, data: [0xFD, 0x45])])
        #expect(merged.merging(rsp) == merged)  // idempotent: repeated reports do not grow it
        #expect(merged.merging(adv) == merged)

        // Later singular values win; lists unite; manufacturer data is keyed by company.
        let a = AdvertisingData([.completeServiceUUIDs16([0x180D]), .txPowerLevel(0), .shortenedLocalName("HR"),
                                 .manufacturerSpecificData(companyID: 1, data: [1])])
        let b = AdvertisingData([.completeServiceUUIDs16([0x180F, 0x180D]), .txPowerLevel(-8), .completeLocalName("HR Belt"),
                                 .manufacturerSpecificData(companyID: 1, data: [2]), .manufacturerSpecificData(companyID: 2, data: [3])])
        let m = a.merging(b)
        #expect(m.structures == [.completeServiceUUIDs16([0x180D, 0x180F]), .txPowerLevel(-8), .completeLocalName("HR Belt"),
                                 .manufacturerSpecificData(companyID: 1, data: [2]), .manufacturerSpecificData(companyID: 2, data: [3])])
    }

    @Test func mergedListsStayWithinOneStructure() {
        var ad = AdvertisingData()
        for i in 0..<200 { ad = ad.merging(AdvertisingData([.completeServiceUUIDs16([UInt16(i)])])) }
        #expect(ad.structures.count == 1)
        #expect(ad.bytes.count <= 256)
    }
}
