import BLECore
@testable import BLESensors
import Testing

/// Mopeka manufacturer data (company 0x0059 with service 0xFEE5). Expected values from
/// mopeka-iot-ble's tests and TheengsDecoder's (which gives the level in cm without truncating:
/// 15.4144725 cm is 154 mm here, as mopeka-iot-ble truncates to whole millimetres).
@Suite struct MopekaTests {
    @Test func proPlusOfMopekaIotBLE() throws {
        // PRO_INSTALLED_SERVICE_INFO: 27 °C, 341 mm, quality 3 (100 %), 3.5 V (100 %).
        try expectReading(Mopeka.self, "mopeka-pro-plus", brand: "Mopeka", model: "M1015 Pro Plus", [
            ("temperature", .int(27)), ("tank_level", .int(341)), ("reading_quality", .int(100)),
            ("battery", .double(100)), ("voltage", .double(3.5)),
        ])
        // PRO_SERVICE_BAD_QUALITY_INFO: quality 0, no level; 30 °C, 3.5625 V.
        try expectReading(Mopeka.self, "mopeka-pro-plus-no-reading", brand: "Mopeka", model: "M1015 Pro Plus", [
            ("temperature", .int(30)), ("reading_quality", .int(0)), ("battery", .double(100)), ("voltage", .double(3.5625)),
        ])
    }

    @Test func proCheckOfTheengs() throws {
        try expectReading(Mopeka.self, "mopeka-pro-check", brand: "Mopeka", model: "M1017 Pro Check", [
            ("temperature", .int(25)), ("tank_level", .int(154)), ("reading_quality", .int(100)),
            ("battery", .double(100)), ("voltage", .double(2.90625)),
        ])
        // 62.3919125 cm; battery 99.03846154 % (to one decimal here, as mopeka-iot-ble rounds).
        try expectReading(Mopeka.self, "mopeka-pro-check-low-battery", brand: "Mopeka", model: "M1017 Pro Check", [
            ("temperature", .int(25)), ("tank_level", .int(623)), ("reading_quality", .int(100)),
            ("battery", .double(99)), ("voltage", .double(2.84375)),
        ])
        try expectReading(Mopeka.self, "mopeka-bottlecheck", brand: "Mopeka", model: "M1017 Lippert BottleCheck", [
            ("temperature", .int(19)), ("reading_quality", .int(0)), ("battery", .double(100)), ("voltage", .double(2.90625)),
        ])
    }

    @Test func hostilePayloads() throws {
        let valid: [UInt8] = [0x08, 0x70, 0x43, 0xB6, 0xC3, 0xE0, 0xF5, 0x09, 0xFA, 0xE3]
        expectMalformed(Mopeka.self, BrandFixtures.manufacturer(0x0059, Array(valid.dropLast()), uuid16: 0xFEE5), "9 bytes")
        expectMalformed(Mopeka.self, BrandFixtures.manufacturer(0x0059, valid + [0], uuid16: 0xFEE5), "11 bytes")
        expectMalformed(Mopeka.self, BrandFixtures.manufacturer(0x0059, [0x01] + valid.dropFirst(), uuid16: 0xFEE5), "unknown hardware id")
        // Without service 0xFEE5, company 0x0059 (Nordic) is someone else's.
        #expect(try Mopeka.decode(BrandFixtures.manufacturer(0x0059, valid), keys: SensorKeys()) == nil)
        // Edges: battery 0 V, -40 °C, the longest echo at the coldest temperature.
        let cold = try #require(try Mopeka.decode(BrandFixtures.manufacturer(0x0059, [0x03, 0x00, 0x80, 0xFF, 0xFF, 0, 0, 0, 0, 0], uuid16: 0xFEE5), keys: SensorKeys()))
        #expect(cold["temperature"] == .int(-40))
        #expect(cold["tank_level"] == .int(Int(Double(0x3FFF) * 0.573045)))
        #expect(cold["battery"] == .double(0))
        #expect(cold["voltage"] == .double(0))
    }
}
