import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// Battery, ESS, iBeacon and Eddystone: exact values, and nothing for truncated or hostile data.
@Suite struct StandardFormatTests {
    static func decoded(_ structures: [ADStructure]) -> String {
        var decoder = SensorDecoder()
        let ad = SensorAdvertisement(address: LEAddress(BluetoothAddress(rawValue: 1), type: .random), data: AdvertisingData(structures))
        return JSONValue.object(decoder.decode(ad).object).text
    }

    @Test func eddystoneUIDAndTLM() {
        // UID: frame 0x00, TX -20, namespace 00112233445566778899, instance AABBCCDDEEFF.
        let uid: [UInt8] = [0x00, 0xEC, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]
        #expect(Self.decoded([.serviceData16(uuid: 0xFEAA, data: uid)]) ==
                #"{"eddystone":{"frame":"uid","txPower":-20,"namespace":"00112233445566778899","instance":"AABBCCDDEEFF"}}"#)
        // TLM: version 0, 3000 mV, 25.5 °C (0x1980 in 8.8), 258 advertisements, 100.0 s.
        let tlm: [UInt8] = [0x20, 0x00, 0x0B, 0xB8, 0x19, 0x80, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x03, 0xE8]
        #expect(Self.decoded([.serviceData16(uuid: 0xFEAA, data: tlm)]) ==
                #"{"eddystone":{"frame":"tlm","batteryMillivolts":3000,"temperature":25.5,"advertisements":258,"uptimeSeconds":100}}"#)
    }

    @Test func environmentalSensingInHomeAssistantUnits() {
        // 0x2A6E = 0x0910 (23.20 °C), 0x2A6F = 0x1194 (45.00 %), 0x2A6D = 1,013,250 × 0.1 Pa = 1013.25 hPa.
        #expect(Self.decoded([.serviceData16(uuid: 0x180F, data: [0x5A]), .serviceData16(uuid: 0x2A6E, data: [0x10, 0x09]),
                              .serviceData16(uuid: 0x2A6F, data: [0x94, 0x11]), .serviceData16(uuid: 0x2A6D, data: [0x02, 0x76, 0x0F, 0x00])]) ==
                #"{"battery":90,"temperature":23.2,"humidity":45,"pressure":1013.25}"#)
    }

    @Test func truncatedOrHostileDataDecodesToNothing() {
        let cases: [ADStructure] = [
            .serviceData16(uuid: 0xFEAA, data: []),
            .serviceData16(uuid: 0xFEAA, data: [0x00, 0xEC, 0x00]),
            .serviceData16(uuid: 0xFEAA, data: [0x10, 0xEB, 0x09, 0x41]),
            .serviceData16(uuid: 0xFEAA, data: [0x10, 0xEB, 0x00, 0x00, 0x7F]),
            .serviceData16(uuid: 0xFEAA, data: [0x20, 0x01] + [UInt8](repeating: 0, count: 12)),
            .serviceData16(uuid: 0x180F, data: [0x65]),
            .serviceData16(uuid: 0x180F, data: [0x50, 0x50]),
            .serviceData16(uuid: 0x2A6E, data: [0x10]),
            .serviceData16(uuid: 0x2A6E, data: [0x00, 0x80]),
            .serviceData16(uuid: 0x2A6D, data: [0x01, 0x02, 0x03]),
            .manufacturerSpecificData(companyID: 0x004C, data: [0x02, 0x15, 0x00]),
            .manufacturerSpecificData(companyID: 0x004C, data: [0x02, 0x16] + [UInt8](repeating: 0, count: 21)),
        ]
        for s in cases {
            #expect(Self.decoded([s]) == "{}", "\(s)")
        }
    }
}
