import BLECore
@testable import BLESensors
import Testing

/// Govee's manufacturer data. Expected values from TheengsDecoder's and govee-ble's tests; the
/// packed three-byte models keep the temperature to tenths as govee-ble does (Theengs gives
/// -7.3481 for the bytes govee-ble and the display read as -7.3).
@Suite struct GoveeTests {
    @Test func h5072AndH5075() throws {
        try expectReading(Govee.self, "govee-h5075", brand: "Govee", model: "H5075",
                          [("temperature", .double(26.8)), ("humidity", .double(52.6)), ("battery", .int(100))])
        try expectReading(Govee.self, "govee-h5075-negative", brand: "Govee", model: "H5075",
                          [("temperature", .double(-7.3)), ("humidity", .double(48.1)), ("battery", .int(100))])
        try expectReading(Govee.self, "govee-h5072", brand: "Govee", model: "H5072",
                          [("temperature", .double(27.5)), ("humidity", .double(53.1)), ("battery", .int(100))])
        // The appended "INTELLI_ROCKS" iBeacon is dropped before the length is looked at.
        try expectReading(Govee.self, "govee-h5075-ibeacon", brand: "Govee", model: "H5075",
                          [("temperature", .double(23)), ("humidity", .double(62.8)), ("battery", .int(92))])
    }

    @Test func h5101FamilyByLocalName() throws {
        // A real H5101 advertisement (the btmon capture in jsalbre/venus-govee-ble's
        // src/btmon_reader.py; no reference suite has one): packed 0x00B8EB = 47339 is 4.7 °C
        // and 33.9 % by the layout govee-ble reads (value / 10000 °C, value % 1000 / 10 %),
        // battery 0x49 = 73 % (that project's samples show this sensor at 73-74 %).
        try expectReading(Govee.self, "govee-h5101", brand: "Govee", model: "H5101",
                          [("temperature", .double(4.7)), ("humidity", .double(33.9)), ("battery", .int(73))])
        try expectReading(Govee.self, "govee-h5102", brand: "Govee", model: "H5102",
                          [("temperature", .double(21.9)), ("humidity", .double(40.6)), ("battery", .int(100))])
        try expectReading(Govee.self, "govee-h5174-negative", brand: "Govee", model: "H5174",
                          [("temperature", .double(-7.2)), ("humidity", .double(29.5)), ("battery", .int(100))])
        // govee-ble GVH5177_SERVICE_INFO: 21.0 °C, 47.0 %, 100 %.
        try expectReading(Govee.self, "govee-h5177", brand: "Govee", model: "H5177",
                          [("temperature", .double(21)), ("humidity", .double(47)), ("battery", .int(100))])
    }

    @Test func h5074AndH5179() throws {
        try expectReading(Govee.self, "govee-h5074", brand: "Govee", model: "H5074",
                          [("temperature", .double(22.44)), ("humidity", .double(74.59)), ("battery", .int(100))])
        try expectReading(Govee.self, "govee-h5074-negative", brand: "Govee", model: "H5074",
                          [("temperature", .double(-13.76)), ("humidity", .double(60.92)), ("battery", .int(100))])
        try expectReading(Govee.self, "govee-h5179", brand: "Govee", model: "H5179",
                          [("temperature", .double(20.3)), ("humidity", .double(57.2)), ("battery", .int(65))])
    }

    @Test func h5106AirQuality() throws {
        try expectReading(Govee.self, "govee-h5106", brand: "Govee", model: "H5106",
                          [("temperature", .double(24.8)), ("humidity", .double(70.2)), ("pm25", .int(1))])
        try expectReading(Govee.self, "govee-h5106-negative", brand: "Govee", model: "H5106",
                          [("temperature", .double(-7.5)), ("humidity", .double(76.8)), ("pm25", .int(0))])
        try expectReading(Govee.self, "govee-h5106-ibeacon", brand: "Govee", model: "H5106",
                          [("temperature", .double(22.7)), ("humidity", .double(63.1)), ("pm25", .int(2))])
    }

    @Test func h5055GrillProbes() throws {
        // govee-ble GVH5055_SERVICE_INFO_PROBE_12: probe 1 at 26 °C, battery 100.
        try expectReading(Govee.self, "govee-h5055", brand: "Govee", model: "H5055",
                          [("temperature_probe_1", .int(26)), ("battery", .int(100))])
        // TheengsDecoder: probes 1 and 2 at 23 and 115 °C, battery 70; probes 3 and 4 at 86 and 145.
        try expectReading(Govee.self, "govee-h5055-probes-1-2", brand: "Govee", model: "H5055",
                          [("temperature_probe_1", .int(23)), ("temperature_probe_2", .int(115)), ("battery", .int(70))])
        try expectReading(Govee.self, "govee-h5055-probes-3-4", brand: "Govee", model: "H5055",
                          [("temperature_probe_3", .int(86)), ("temperature_probe_4", .int(145)), ("battery", .int(65))])
    }

    @Test func sensorErrorFlagDropsTemperatureAndHumidity() throws {
        // Bit 7 of the battery byte flags a sensor error (govee-ble): battery 100 alone.
        let r = try #require(try Govee.decode(BrandFixtures.manufacturer(0xEC88, [0x00, 0x04, 0x18, 0xEE, 0xE4, 0x00]), keys: SensorKeys()))
        #expect(r.values.map(\.key) == ["battery"])
        #expect(r["battery"] == .int(100))
    }

    @Test func hostilePayloads() throws {
        expectMalformed(Govee.self, BrandFixtures.manufacturer(0xEC88, [0x00, 0x04, 0x18, 0xEE, 0x64]), "0xEC88 with 5 bytes")
        expectMalformed(Govee.self, BrandFixtures.manufacturer(0xEC88, Array(repeating: 0xFF, count: 8)), "0xEC88 with 8 bytes")
        expectMalformed(Govee.self, BrandFixtures.manufacturer(0x0001, [1, 1, 3, 0x59, 0x0E, 0x64, 0], name: "GVH5102_1234"), "H5102 with 7 bytes")
        expectMalformed(Govee.self, BrandFixtures.manufacturer(0x8801, [0xEC, 0, 1, 1]), "H5179 with 4 bytes")
        expectMalformed(Govee.self, BrandFixtures.manufacturer(0xAF2F, Array(repeating: 0, count: 19), uuid16: 0x5550), "H5055 with 19 bytes")
        // Byte 3 of an H5055 choosing a fourth probe pair gives no probe, and 0xFFFF is no probe.
        let noPair = try #require(try Govee.decode(BrandFixtures.manufacturer(0xAF2F, [0x55, 0, 0x64, 0xFF] + Array(repeating: 0xFF, count: 16), uuid16: 0x5550), keys: SensorKeys()))
        #expect(noPair.values.map(\.key) == ["battery"])
        // Extremes of the packed value: bit 23 set and everything else at its maximum.
        let extreme = try #require(try Govee.decode(BrandFixtures.manufacturer(0xEC88, [0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00]), keys: SensorKeys()))
        #expect(extreme["temperature"] == .double(-838.8))
        #expect(extreme["humidity"] == .double(60.7))
        // Company 0x0001 without a Govee name is not Govee.
        #expect(try Govee.decode(BrandFixtures.manufacturer(0x0001, [1, 1, 3, 0x59, 0x0E, 0x64]), keys: SensorKeys()) == nil)
    }
}
