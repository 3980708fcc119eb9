import BLECore
@testable import BLESensors
import Testing

/// Ruuvi data formats 3 and 5 (docs.ruuvi.com). Acceleration in m/s² to two decimals, as
/// ruuvitag-ble gives it; TheengsDecoder's figures for the same bytes are ten times smaller
/// (-0.980665 for -1000 mG), which the format's documentation contradicts (mG × 9.80665 / 1000).
@Suite struct RuuviTests {
    @Test func rawV2ValidVectorOfTheDocumentation() throws {
        // docs.ruuvi.com data format 5, "valid data": 24.3 °C, 100044 Pa, 53.49 %, acceleration
        // 0.004 g, -0.004 g, 1.036 g, 2.977 V, movement 66, sequence 205.
        try expectReading(Ruuvi.self, "ruuvi-v5-valid", brand: "Ruuvi", model: "RuuviTag RAWv2", [
            ("temperature", .double(24.3)), ("humidity", .double(53.49)), ("pressure", .double(1000.44)),
            ("acceleration_x", .double(0.04)), ("acceleration_y", .double(-0.04)), ("acceleration_z", .double(10.16)),
            ("voltage", .double(2.977)), ("movement_counter", .int(66)),
        ], packetID: 205)
    }

    @Test func rawV2EdgesOfTheDocumentation() throws {
        // "maximum values": 163.835 °C, 163.835 %, 115534 Pa, 32.767 g, 3.646 V, 254, 65534.
        try expectReading(Ruuvi.self, "ruuvi-v5-maximum", brand: "Ruuvi", model: "RuuviTag RAWv2", [
            ("temperature", .double(163.835)), ("humidity", .double(163.835)), ("pressure", .double(1155.34)),
            ("acceleration_x", .double(321.33)), ("acceleration_y", .double(321.33)), ("acceleration_z", .double(321.33)),
            ("voltage", .double(3.646)), ("movement_counter", .int(254)),
        ], packetID: 65534)
        // "minimum values": -163.835 °C, 0 %, 50000 Pa, -32.767 g, 1.6 V, 0, 0.
        try expectReading(Ruuvi.self, "ruuvi-v5-minimum", brand: "Ruuvi", model: "RuuviTag RAWv2", [
            ("temperature", .double(-163.835)), ("humidity", .double(0)), ("pressure", .double(500)),
            ("acceleration_x", .double(-321.33)), ("acceleration_y", .double(-321.33)), ("acceleration_z", .double(-321.33)),
            ("voltage", .double(1.6)), ("movement_counter", .int(0)),
        ], packetID: 0)
    }

    @Test func rawV2NotAvailableValuesAreAbsent() throws {
        // docs.ruuvi.com "invalid values": every field holds its "not available" value.
        try expectReading(Ruuvi.self, "ruuvi-v5-invalid", brand: "Ruuvi", model: "RuuviTag RAWv2", [])
    }

    @Test func rawV2OutdoorTagOfRuuvitagBLE() throws {
        // ruuvitag-ble tests/test_v5.py: 7.2 °C, 61.84 %, 1013.54 hPa, 2395 mV, movement 114,
        // acceleration -7.02, 6.39, -2.51 m/s².
        try expectReading(Ruuvi.self, "ruuvi-v5-outdoor", brand: "Ruuvi", model: "RuuviTag RAWv2", [
            ("temperature", .double(7.2)), ("humidity", .double(61.84)), ("pressure", .double(1013.54)),
            ("acceleration_x", .double(-7.02)), ("acceleration_y", .double(6.39)), ("acceleration_z", .double(-2.51)),
            ("voltage", .double(2.395)), ("movement_counter", .int(114)),
        ], packetID: 0x6976)
    }

    @Test func rawV1OfRuuvitagBLE() throws {
        // ruuvitag-ble tests/test_v3.py: 12.31 °C, 89.0 %, 1017.44 hPa, 2191 mV, 1.2, 0.37, 9.57 m/s².
        try expectReading(Ruuvi.self, "ruuvi-v3", brand: "Ruuvi", model: "RuuviTag RAWv1", [
            ("temperature", .double(12.31)), ("humidity", .double(89)), ("pressure", .double(1017.44)),
            ("acceleration_x", .double(1.2)), ("acceleration_y", .double(0.37)), ("acceleration_z", .double(9.57)),
            ("voltage", .double(2.191)),
        ])
        // The same with temperature 0x8145: -1.69 °C (sign bit, 1, 69 hundredths).
        let subzero = try #require(try Ruuvi.decode(try BrandFixtures.ad("ruuvi-v3-subzero"), keys: SensorKeys()))
        #expect(subzero["temperature"] == .double(-1.69))
    }

    @Test func rawV1OfTheengsWithAccelerationInMetresPerSecondSquared() throws {
        // TheengsDecoder tests/BLE/test_ble.cpp "RuuviTag RAWv1": 20.5 %, 26.3 °C, 1027.66 hPa,
        // 2.899 V; its accelerations -0.980665, -1.69262779, 0.70019481 are -1000, -1726 and
        // 714 mG divided by 10 000 instead of 1000 (here -9.81, -16.93, 7.0 m/s²).
        try expectReading(Ruuvi.self, "ruuvi-v3-theengs", brand: "Ruuvi", model: "RuuviTag RAWv1", [
            ("temperature", .double(26.3)), ("humidity", .double(20.5)), ("pressure", .double(1027.66)),
            ("acceleration_x", .double(-9.81)), ("acceleration_y", .double(-16.93)), ("acceleration_z", .double(7)),
            ("voltage", .double(2.899)),
        ])
    }

    @Test func hostilePayloads() throws {
        let valid = try #require([UInt8](hex: "0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F"))
        expectMalformed(Ruuvi.self, BrandFixtures.manufacturer(0x0499, Array(valid.dropLast())), "RAWv2 of 23 bytes")
        expectMalformed(Ruuvi.self, BrandFixtures.manufacturer(0x0499, valid + [0]), "RAWv2 of 25 bytes")
        expectMalformed(Ruuvi.self, BrandFixtures.manufacturer(0x0499, [5]), "format byte alone")
        let v1 = try #require([UInt8](hex: "03b20c1fca20007a002603d0088f"))
        expectMalformed(Ruuvi.self, BrandFixtures.manufacturer(0x0499, Array(v1.dropLast())), "RAWv1 of 13 bytes")
        var fraction = v1
        fraction[3] = 100
        expectMalformed(Ruuvi.self, BrandFixtures.manufacturer(0x0499, fraction), "RAWv1 with 100 hundredths")
        // Other Ruuvi formats and empty data are not RAWv1/RAWv2.
        #expect(try Ruuvi.decode(BrandFixtures.manufacturer(0x0499, [6] + Array(repeating: 0, count: 19)), keys: SensorKeys()) == nil)
        #expect(try Ruuvi.decode(BrandFixtures.manufacturer(0x0499, []), keys: SensorKeys()) == nil)
        #expect(try Ruuvi.decode(BrandFixtures.manufacturer(0x0059, valid), keys: SensorKeys()) == nil)
    }
}
