import BLECore
@testable import BLESensors
import Testing

/// Qingping service data 0xFDCD. Expected values from TheengsDecoder's tests. Where Theengs and
/// qingping-ble disagree this follows the records' types as qingping-ble reads them: record
/// 0x02 is the battery on every model (Theengs leaves it out for the CGDK2), record 0x11 is
/// light, not motion.
@Suite struct QingpingTests {
    @Test func climateSensors() throws {
        try expectReading(Qingping.self, "qingping-cgdn1", brand: "Qingping", model: "CGDN1", [
            ("temperature", .double(29)), ("humidity", .double(33.2)), ("pm25", .int(113)), ("pm10", .int(114)), ("co2", .int(1005)),
        ])
        try expectReading(Qingping.self, "qingping-cgp1w", brand: "Qingping", model: "CGP1W", [
            ("temperature", .double(26.4)), ("humidity", .double(64.7)), ("pressure", .double(1006.3)), ("battery", .int(92)),
        ])
        try expectReading(Qingping.self, "qingping-cgdk2", brand: "Qingping", model: "CGDK2", [
            ("temperature", .double(23.2)), ("humidity", .double(91.1)), ("battery", .int(11)),
        ])
        try expectReading(Qingping.self, "qingping-cgg1", brand: "Qingping", model: "CGG1", [
            ("temperature", .double(27.4)), ("humidity", .double(62.6)), ("battery", .int(13)),
        ])
        try expectReading(Qingping.self, "qingping-cgp23w", brand: "Qingping", model: "CGP23W", [
            ("temperature", .double(23.2)), ("humidity", .double(47.6)), ("battery", .int(94)), ("pressure", .double(1007.4)),
        ])
    }

    @Test func motionAndLight() throws {
        try expectReading(Qingping.self, "qingping-cgpr1-dark", brand: "Qingping", model: "CGPR1",
                          [("battery", .int(83)), ("illuminance", .int(0))], packetID: 0x18)
        try expectReading(Qingping.self, "qingping-cgpr1-bright", brand: "Qingping", model: "CGPR1",
                          [("battery", .int(100)), ("illuminance", .int(517))], packetID: 0xC4)
        try expectReading(Qingping.self, "qingping-cgpr1-motion", brand: "Qingping", model: "CGPR1",
                          [("motion", .bool(true)), ("illuminance", .int(3))], packetID: 0x50)
        try expectReading(Qingping.self, "qingping-cgpr1-light", brand: "Qingping", model: "CGPR1",
                          [("light", .bool(true))], packetID: 0x5F)
    }

    @Test func door() throws {
        try expectReading(Qingping.self, "qingping-cgh1-open", brand: "Qingping", model: "CGH1", [("opening", .bool(true))], packetID: 0xCB)
        try expectReading(Qingping.self, "qingping-cgh1-closed", brand: "Qingping", model: "CGH1", [("opening", .bool(false))], packetID: 0xD5)
    }

    @Test func hostilePayloads() throws {
        let header: [UInt8] = [0x08, 0x07, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA]
        expectMalformed(Qingping.self, BrandFixtures.service(0xFDCD, Array(header.dropLast())), "header of 7 bytes")
        expectMalformed(Qingping.self, BrandFixtures.service(0xFDCD, header + [0x01]), "record header cut")
        expectMalformed(Qingping.self, BrandFixtures.service(0xFDCD, header + [0x01, 0x04, 0x12, 0x01, 0x72]), "record cut")
        expectMalformed(Qingping.self, BrandFixtures.service(0xFDCD, header + [0x01, 0x03, 0x12, 0x01, 0x72]), "temperature record of 3 bytes")
        expectMalformed(Qingping.self, BrandFixtures.service(0xFDCD, header + [0x02, 0xFF] + Array(repeating: 0, count: 200)), "record longer than the data")
        // Edges: the lowest temperature, the highest humidity and illuminance.
        let edge = try #require(try Qingping.decode(BrandFixtures.service(0xFDCD, header + [0x01, 0x04, 0x00, 0x80, 0xFF, 0xFF, 0x09, 0x04, 0xFF, 0xFF, 0xFF, 0xFF]), keys: SensorKeys()))
        #expect(edge["temperature"] == .double(-3276.8))
        #expect(edge["humidity"] == .double(6553.5))
        #expect(edge["illuminance"] == .int(4_294_967_295))
        // Unknown record types are skipped; a record of 255 bytes that fits is read past.
        let skipped = try #require(try Qingping.decode(BrandFixtures.service(0xFDCD, header + [0x7E, 0x02, 0, 0, 0x02, 0x01, 0x32]), keys: SensorKeys()))
        #expect(skipped.values.map(\.key) == ["battery"])
        let long = try #require(try Qingping.decode(BrandFixtures.service(0xFDCD, header + [0x7E, 0xFF] + Array(repeating: 0, count: 255)), keys: SensorKeys()))
        #expect(long.values.isEmpty)
    }
}
