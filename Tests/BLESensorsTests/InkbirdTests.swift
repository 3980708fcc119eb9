import BLECore
@testable import BLESensors
import Testing

/// Inkbird IBS-TH and iBBQ advertisements. Expected values from TheengsDecoder's tests. A probe
/// reading of 0xFFF6 is -1.0 °C as inkbird-ble reads it (signed, only 0xFFFF means no probe);
/// Theengs leaves it out.
@Suite struct InkbirdTests {
    @Test func ibsTH() throws {
        try expectReading(Inkbird.self, "inkbird-ibs-th1", brand: "Inkbird", model: "IBS-TH1",
                          [("temperature", .double(26.62)), ("humidity", .double(53.79)), ("battery", .int(89))])
        try expectReading(Inkbird.self, "inkbird-ibs-th1-cold", brand: "Inkbird", model: "IBS-TH1",
                          [("temperature", .double(2.27)), ("humidity", .double(19.79)), ("battery", .int(100))])
        // Theengs "extprobe": true: the temperature is the external probe's.
        try expectReading(Inkbird.self, "inkbird-ibs-th1-probe", brand: "Inkbird", model: "IBS-TH1",
                          [("temperature_probe_1", .double(25.44)), ("humidity", .double(51.18)), ("battery", .int(48))])
        // The IBS-TH2 without humidity sends 0 there.
        try expectReading(Inkbird.self, "inkbird-ibs-th2-negative", brand: "Inkbird", model: "IBS-TH2/P01B",
                          [("temperature", .double(-11.62)), ("battery", .int(89))])
    }

    @Test func iBBQProbes() throws {
        try expectReading(Inkbird.self, "inkbird-ibt-2x", brand: "Inkbird", model: "IBT-2X",
                          [("temperature_probe_1", .double(28)), ("temperature_probe_2", .double(32))])
        try expectReading(Inkbird.self, "inkbird-ibt-2x-one-probe", brand: "Inkbird", model: "IBT-2X",
                          [("temperature_probe_2", .double(33.5))])
        try expectReading(Inkbird.self, "inkbird-ibt-4xs", brand: "Inkbird", model: "IBT-4XS", [
            ("temperature_probe_1", .double(26)), ("temperature_probe_2", .double(-1)),
            ("temperature_probe_3", .double(60)), ("temperature_probe_4", .double(53)),
        ])
        // Theengs' IBT-6XS row: probes 1, 2 and 4 at 21, 20 and 21 °C; Theengs leaves out the
        // three 0xFFF6 probes, read here as -1.0 °C as on the 4XS above.
        try expectReading(Inkbird.self, "inkbird-ibt-6xs", brand: "Inkbird", model: "IBT-6XS", [
            ("temperature_probe_1", .double(21)), ("temperature_probe_2", .double(20)), ("temperature_probe_3", .double(-1)),
            ("temperature_probe_4", .double(21)), ("temperature_probe_5", .double(-1)), ("temperature_probe_6", .double(-1)),
        ])
    }

    @Test func hostilePayloads() throws {
        expectMalformed(Inkbird.self, BrandFixtures.manufacturer(0x0A66, [0x03, 0x15, 0x00, 0x10, 0x80, 0x59], name: "sps"), "IBS-TH of 8 bytes")
        expectMalformed(Inkbird.self, BrandFixtures.manufacturer(0x0A66, Array(repeating: 0, count: 8), name: "tps"), "IBS-TH of 10 bytes")
        expectMalformed(Inkbird.self, BrandFixtures.manufacturer(0, Array(repeating: 0, count: 11), name: "iBBQ"), "iBBQ of 13 bytes")
        expectMalformed(Inkbird.self, BrandFixtures.manufacturer(0, Array(repeating: 0, count: 30), name: "iBBQ"), "iBBQ of 32 bytes")
        // Edges: the lowest and highest signed readings, every probe unplugged.
        let edges = try #require(try Inkbird.decode(BrandFixtures.manufacturer(0x8000, [0xFF, 0x7F, 0, 0, 0, 0xFF, 0], name: "tps"), keys: SensorKeys()))
        #expect(edges["temperature"] == .double(-327.68))
        #expect(edges["humidity"] == .double(327.67))
        #expect(edges["battery"] == .int(255))
        let unplugged = try #require(try Inkbird.decode(BrandFixtures.manufacturer(0, [0, 0, 1, 2, 3, 4, 5, 6, 0xFF, 0xFF, 0xFF, 0xFF], name: "iBBQ"), keys: SensorKeys()))
        #expect(unplugged.values.isEmpty)
        // Other names are not Inkbird.
        #expect(try Inkbird.decode(BrandFixtures.manufacturer(0x0A66, [0x03, 0x15, 0x00, 0x10, 0x80, 0x59, 0x08], name: "spsx"), keys: SensorKeys()) == nil)
    }
}
