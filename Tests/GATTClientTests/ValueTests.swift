import Testing
import GATTClient

/// Typed values against bytes laid out as the service specifications define them (Heart
/// Rate Service 1.0 3.1.1, Battery Service 1.0 3.1, Health Thermometer Service 1.0 3.1,
/// Current Time Service 1.1 3.1, Device Information Service 1.1 3.9, GATT Specification
/// Supplement Date Time, IEEE 11073-20601 FLOAT special values).
@Suite struct ValueTests {
    @Test func heartRateMeasurement() throws {
        // Flags 0x00: 8-bit value, no contact status.
        #expect(try HeartRateMeasurement(gattValue: [0x00, 0x48]) == HeartRateMeasurement(beatsPerMinute: 72))
        // Flags 0x16: 8-bit value, contact supported and detected, RR-Intervals 1024 and 512 (1 s, 0.5 s).
        let m = try HeartRateMeasurement(gattValue: [0x16, 0x48, 0x00, 0x04, 0x00, 0x02])
        #expect(m.beatsPerMinute == 72 && m.sensorContact == .detected && m.rrIntervals == [1024, 512])
        #expect(m.rrIntervalSeconds == [1.0, 0.5])
        // Flags 0x0D: 16-bit value 300, contact supported not detected, Energy Expended 16 kJ.
        let e = try HeartRateMeasurement(gattValue: [0x0D, 0x2C, 0x01, 0x10, 0x00])
        #expect(e == HeartRateMeasurement(beatsPerMinute: 300, sensorContact: .notDetected, energyExpended: 16))
        #expect(e.gattValue == [0x0D, 0x2C, 0x01, 0x10, 0x00])
        #expect(throws: GATTValueError.truncated(type: "Heart Rate Measurement", needed: 3, got: 2)) { try HeartRateMeasurement(gattValue: [0x01, 0x48]) }
        #expect(throws: GATTValueError.self) { try HeartRateMeasurement(gattValue: [0x10, 0x48, 0x00]) }
        #expect(throws: GATTValueError.self) { try HeartRateMeasurement(gattValue: []) }
    }

    @Test func batteryAndBodySensorLocation() throws {
        #expect(try BatteryLevel(gattValue: [0x64]).percent == 100)
        #expect(throws: GATTValueError.self) { try BatteryLevel(gattValue: [0x65]) }
        #expect(throws: GATTValueError.self) { try BatteryLevel(gattValue: [0x10, 0x00]) }
        #expect(try BodySensorLocation(gattValue: [0x01]) == .chest)
        #expect(try BodySensorLocation(gattValue: [0x05]).name == "Ear Lobe")
        #expect(throws: GATTValueError.self) { try BodySensorLocation(gattValue: [0x07]) }
    }

    @Test func temperatureMeasurement() throws {
        // Celsius, FLOAT mantissa 0x000171 = 369, exponent -1: 36.9.
        let c = try TemperatureMeasurement(gattValue: [0x00, 0x71, 0x01, 0x00, 0xFF])
        #expect(c.unit == .celsius && c.timestamp == nil && c.temperatureType == nil)
        #expect(abs(c.temperature.doubleValue - 36.9) < 1e-9)
        // Fahrenheit, Time Stamp 2025-11-29 13:04:27, Temperature Type 2 (body): 985 x 10^-1.
        let f = try TemperatureMeasurement(gattValue: [0x07, 0xD9, 0x03, 0x00, 0xFF, 0xE9, 0x07, 11, 29, 13, 4, 27, 0x02])
        #expect(f.unit == .fahrenheit && f.temperatureType == 2)
        #expect(f.timestamp == GATTDateTime(year: 2025, month: 11, day: 29, hours: 13, minutes: 4, seconds: 27))
        #expect(abs(f.temperature.doubleValue - 98.5) < 1e-9)
        #expect(f.gattValue == [0x07, 0xD9, 0x03, 0x00, 0xFF, 0xE9, 0x07, 11, 29, 13, 4, 27, 0x02])
        // Special values (exponent 0): NaN 0x7FFFFF, NRes 0x800000, +INF 0x7FFFFE, -INF 0x800002.
        let nan = try TemperatureMeasurement(gattValue: [0x00, 0xFF, 0xFF, 0x7F, 0x00]).temperature
        #expect(nan.special == .notANumber && nan.doubleValue.isNaN)
        #expect(try TemperatureMeasurement(gattValue: [0x00, 0x00, 0x00, 0x80, 0x00]).temperature.special == .notAtThisResolution)
        #expect(try TemperatureMeasurement(gattValue: [0x00, 0xFE, 0xFF, 0x7F, 0x00]).temperature.doubleValue == .infinity)
        #expect(try TemperatureMeasurement(gattValue: [0x00, 0x02, 0x00, 0x80, 0x00]).temperature.doubleValue == -.infinity)
        // Negative mantissa: 0xFFFFFE = -2, exponent 0.
        #expect(try TemperatureMeasurement(gattValue: [0x00, 0xFE, 0xFF, 0xFF, 0x00]).temperature.doubleValue == -2)
        #expect(throws: GATTValueError.self) { try TemperatureMeasurement(gattValue: [0x02, 0x71, 0x01, 0x00, 0xFF, 0xE9]) }
    }

    @Test func currentTimePnPIDAppearance() throws {
        // 2025-11-29 13:04:27, Sunday (7), 128/256 s, manual time update.
        let t = try CurrentTime(gattValue: [0xE9, 0x07, 11, 29, 13, 4, 27, 7, 128, 0x01])
        #expect(t.dateTime.description == "2025-11-29 13:04:27")
        #expect(t.dayOfWeek == 7 && t.fractions256 == 128 && t.adjustReason == .manualTimeUpdate)
        #expect(throws: GATTValueError.self) { try CurrentTime(gattValue: [0xE9, 0x07, 13, 29, 13, 4, 27, 7, 128, 0x01]) }
        // PnP ID of Fixtures/peers/scenarios/heart-rate.json: 01 FFFF 0001 0100.
        let p = try PnPID(gattValue: [0x01, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x01])
        #expect(p == PnPID(vendorIDSource: 1, vendorID: 0xFFFF, productID: 1, productVersion: 0x0100))
        // Appearance 0x0341: Heart Rate Sensor, Heart Rate Belt.
        let a = try Appearance(gattValue: [0x41, 0x03])
        #expect(a.category == 0x0D && a.subcategory == 1 && a.name == "Heart Rate Sensor: Heart Rate Belt")
    }

    @Test func builtIns() throws {
        #expect(try UInt16(gattValue: [0x34, 0x12]) == 0x1234)
        #expect(try UInt32(gattValue: [0x78, 0x56, 0x34, 0x12]) == 0x1234_5678)
        #expect(try UInt64(gattValue: [1, 0, 0, 0, 0, 0, 0, 0x80]) == 0x8000_0000_0000_0001)
        #expect(try Int8(gattValue: [0xFF]) == -1)
        #expect(try Int16(gattValue: [0xFE, 0xFF]) == -2)
        #expect(try Int32(gattValue: [0xFF, 0xFF, 0xFF, 0xFF]) == -1)
        #expect(try String(gattValue: Array("HRM-1".utf8) + [0]) == "HRM-1")
        #expect(throws: GATTValueError.self) { try String(gattValue: [0xC3]) }
        #expect(throws: GATTValueError.truncated(type: "UInt32", needed: 4, got: 3)) { try UInt32(gattValue: [1, 2, 3]) }
        #expect(throws: GATTValueError.tooLong(type: "UInt8", expected: 1, got: 2)) { try UInt8(gattValue: [1, 2]) }
        #expect(UInt16(0x1234).gattValue == [0x34, 0x12])
        #expect(GATTCharacteristicProperties(rawValue: 0x32).description == "read, notify, indicate")
    }
}
