import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// SwitchBot service data (0xFD3D, 0x0D00) and manufacturer data (0x0969), merged across the
/// report and the scan response. Expected values from TheengsDecoder's tests; the Plug Mini's
/// advertisement is bluetooth-data-tools' (test_parse_advertisement_data_unknown_fd3d), read by
/// the layout pySwitchbot documents (byte 7 0x80 on, byte 9 Wi-Fi RSSI, bytes 10-11 power).
@Suite struct SwitchBotTests {
    @Test func meters() throws {
        try expectReading(SwitchBot.self, "switchbot-meter-plus", brand: "SwitchBot", model: "Meter Plus",
                          [("temperature", .double(25.8)), ("humidity", .int(59)), ("battery", .int(58))])
        try expectReading(SwitchBot.self, "switchbot-meter-plus-negative", brand: "SwitchBot", model: "Meter Plus",
                          [("temperature", .double(-25.3)), ("humidity", .int(56)), ("battery", .int(58))])
        try expectReading(SwitchBot.self, "switchbot-meter", brand: "SwitchBot", model: "Meter",
                          [("temperature", .double(25.5)), ("humidity", .int(56)), ("battery", .int(84))])
    }

    @Test func outdoorMeterMergesReportAndScanResponse() throws {
        // Temperature and humidity from the report's manufacturer data, battery from the scan
        // response's service data.
        try expectReading(SwitchBot.self, "switchbot-outdoor-meter", brand: "SwitchBot", model: "Outdoor Meter",
                          [("temperature", .double(25.5)), ("humidity", .int(50)), ("battery", .int(100))])
        try expectReading(SwitchBot.self, "switchbot-outdoor-meter-negative", brand: "SwitchBot", model: "Outdoor Meter",
                          [("temperature", .double(-15.9)), ("humidity", .int(42)), ("battery", .int(65))])
        try expectReading(SwitchBot.self, "switchbot-outdoor-meter-battery", brand: "SwitchBot", model: "Outdoor Meter",
                          [("battery", .int(65))])
    }

    @Test func contactSensor() throws {
        // Theengs: closed, motion, bright, 92 %; open, no motion, dark, 87 %; "timeout not closed", 65 %.
        try expectReading(SwitchBot.self, "switchbot-contact-closed", brand: "SwitchBot", model: "Contact Sensor",
                          [("motion", .bool(true)), ("opening", .bool(false)), ("light", .bool(true)), ("battery", .int(92))])
        try expectReading(SwitchBot.self, "switchbot-contact-open", brand: "SwitchBot", model: "Contact Sensor",
                          [("motion", .bool(false)), ("opening", .bool(true)), ("light", .bool(false)), ("battery", .int(87))])
        try expectReading(SwitchBot.self, "switchbot-contact-timeout", brand: "SwitchBot", model: "Contact Sensor",
                          [("motion", .bool(true)), ("opening", .bool(true)), ("light", .bool(true)), ("battery", .int(65))])
    }

    @Test func motionSensor() throws {
        try expectReading(SwitchBot.self, "switchbot-motion-still", brand: "SwitchBot", model: "Motion Sensor",
                          [("motion", .bool(false)), ("light", .bool(false)), ("battery", .int(55))])
        try expectReading(SwitchBot.self, "switchbot-motion", brand: "SwitchBot", model: "Motion Sensor",
                          [("motion", .bool(true)), ("light", .bool(true)), ("battery", .int(85))])
    }

    @Test func bot() throws {
        try expectReading(SwitchBot.self, "switchbot-bot-off", brand: "SwitchBot", model: "Bot",
                          [("power_on", .bool(false)), ("battery", .int(91))])
        try expectReading(SwitchBot.self, "switchbot-bot-on", brand: "SwitchBot", model: "Bot",
                          [("power_on", .bool(true)), ("battery", .int(76))])
        // Press mode has no on/off state (pySwitchbot); Theengs reports "on" for it.
        try expectReading(SwitchBot.self, "switchbot-bot-press", brand: "SwitchBot", model: "Bot", [("battery", .int(91))])
    }

    @Test func plugMini() throws {
        try expectReading(SwitchBot.self, "switchbot-plug-mini", brand: "SwitchBot", model: "Plug Mini (US)",
                          [("power_on", .bool(false)), ("power", .double(0)), ("signal_strength", .int(-49))])
        // On, drawing 0x7FFF tenths of a watt (bit 15 of the field is not power).
        let on: [UInt8] = [0x60, 0x55, 0xF9, 0x3C, 0x34, 0xDA, 0xD8, 0x80, 0x10, 0x31, 0xFF, 0xFF]
        let ad = SensorAdvertisement(address: BrandFixtures.address, data: AdvertisingData([
            .serviceData16(uuid: 0xFD3D, data: [0x6A, 0x00, 0x64]), .manufacturerSpecificData(companyID: 0x0969, data: on),
        ]))
        let r = try #require(try SwitchBot.decode(ad, keys: SensorKeys()))
        #expect(r.model == "Plug Mini (JP)")
        #expect(r["power_on"] == .bool(true))
        #expect(r["power"] == .double(3276.7))
    }

    @Test func hostilePayloads() throws {
        // Edges: every bit set (the encrypted-flag bit 7 of the type byte too).
        let edge = try #require(try SwitchBot.decode(BrandFixtures.service(0xFD3D, [0xE9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), keys: SensorKeys()))
        #expect(edge.values.map(\.key) == ["temperature", "humidity", "battery"])
        #expect(edge["temperature"] == .double(128.5))
        #expect(edge["humidity"] == .int(127))
        #expect(edge["battery"] == .int(127))
        expectMalformed(SwitchBot.self, BrandFixtures.service(0xFD3D, [0x69, 0x00]), "meter service data of 2 bytes")
        expectMalformed(SwitchBot.self, BrandFixtures.service(0xFD3D, [0x64, 0xC0, 0x5C, 0x01, 0, 0, 0, 0]), "contact of 8 bytes")
        expectMalformed(SwitchBot.self, BrandFixtures.service(0x0D00, [0x73, 0xB0, 0x37, 0, 0]), "motion of 5 bytes")
        expectMalformed(SwitchBot.self, BrandFixtures.service(0xFD3D, [0x67, 0x00, 0x64]), "plug without manufacturer data")
        expectMalformed(SwitchBot.self, BrandFixtures.service(0x0D00, [0x48, 0xD0]), "bot of 2 bytes")
        // Types this decoder does not read (a curtain, 'c') and empty service data are not it.
        #expect((try? SwitchBot.decode(BrandFixtures.service(0xFD3D, [0x63, 0xC0, 0x11, 0x64, 0x11, 0x04]), keys: SensorKeys())) == .some(nil))
        #expect((try? SwitchBot.decode(BrandFixtures.service(0xFD3D, []), keys: SensorKeys())) == .some(nil))
    }
}
