import BLEWire

/// The IEEE 11073-20601 32-bit FLOAT of the health profiles: a signed 8-bit exponent (high
/// byte) and a signed 24-bit mantissa; value = mantissa x 10^exponent. Exponent 0 with the
/// mantissas 0x7FFFFF, 0x800000, 0x7FFFFE, 0x800002, 0x800001 are NaN, NRes, +INF, -INF and
/// reserved.
///
///     IEEE11073Float(rawValue: 0xFF00_0171).doubleValue   // 36.9
public struct IEEE11073Float: Sendable, Hashable, CustomStringConvertible {
    /// A special value (IEEE 11073-20601, Table 19).
    public enum Special: Sendable, Hashable {
        case notANumber, notAtThisResolution, positiveInfinity, negativeInfinity, reserved
    }

    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// mantissa x 10^exponent (mantissa within 24 bits signed).
    public init(mantissa: Int32, exponent: Int8) {
        rawValue = UInt32(UInt8(bitPattern: exponent)) << 24 | UInt32(bitPattern: mantissa) & 0x00FF_FFFF
    }

    public var exponent: Int8 { Int8(bitPattern: UInt8(truncatingIfNeeded: rawValue >> 24)) }
    /// The 24-bit mantissa, sign-extended.
    public var mantissa: Int32 { Int32(bitPattern: rawValue << 8) >> 8 }

    public var special: Special? {
        guard exponent == 0 else { return nil }
        switch rawValue & 0x00FF_FFFF {
        case 0x7FFFFF: return .notANumber
        case 0x800000: return .notAtThisResolution
        case 0x7FFFFE: return .positiveInfinity
        case 0x800002: return .negativeInfinity
        case 0x800001: return .reserved
        default: return nil
        }
    }

    /// The number; NaN for NaN, NRes and reserved, ±infinity for the infinities.
    public var doubleValue: Double {
        switch special {
        case .notANumber, .notAtThisResolution, .reserved: return .nan
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case nil:
            var v = Double(mantissa)
            let e = Int(exponent)
            for _ in 0..<abs(e) { v = e > 0 ? v * 10 : v / 10 }
            return v
        }
    }

    public var description: String {
        switch special {
        case .notANumber: return "NaN"
        case .notAtThisResolution: return "NRes"
        case .positiveInfinity: return "+INF"
        case .negativeInfinity: return "-INF"
        case .reserved: return "reserved"
        case nil: return "\(doubleValue)"
        }
    }
}

/// Date Time (0x2A08), GATT Specification Supplement 3.70: year, month, day, hours,
/// minutes, seconds (0 for an unknown year, month or day).
public struct GATTDateTime: GATTDecodable, GATTEncodable, Sendable, Hashable, CustomStringConvertible {
    public var year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8
    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8) {
        self.year = year; self.month = month; self.day = day; self.hours = hours; self.minutes = minutes; self.seconds = seconds
    }
    init(reading r: inout ValueReader) throws(GATTValueError) {
        year = try r.u16(); month = try r.u8(); day = try r.u8()
        hours = try r.u8(); minutes = try r.u8(); seconds = try r.u8()
        guard month <= 12, day <= 31, hours <= 23, minutes <= 59, seconds <= 59 else {
            throw .invalid(type: "Date Time", detail: "\(self) is out of range")
        }
    }
    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Date Time")
        try self.init(reading: &r)
        try r.end()
    }
    public var gattValue: [UInt8] {
        var a: [UInt8] = []; a.appendLE16(year); a += [month, day, hours, minutes, seconds]; return a
    }
    /// "2026-11-29 13:04:27".
    public var description: String {
        func two(_ v: UInt8) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(hours)):\(two(minutes)):\(two(seconds))"
    }
}

/// Temperature Measurement (0x2A1C), Health Thermometer Service 1.0, 3.1: Flags (bit 0
/// Fahrenheit, bit 1 Time Stamp present, bit 2 Temperature Type present), a FLOAT, then the
/// optional fields.
public struct TemperatureMeasurement: GATTDecodable, GATTEncodable, Sendable, Hashable {
    public enum Unit: Sendable, Hashable { case celsius, fahrenheit }
    public var temperature: IEEE11073Float
    public var unit: Unit
    public var timestamp: GATTDateTime?
    /// Temperature Type (0x2A1D): 1 armpit, 2 body, 3 ear, 4 finger, 5 gastro-intestinal
    /// tract, 6 mouth, 7 rectum, 8 toe, 9 tympanum.
    public var temperatureType: UInt8?

    public init(temperature: IEEE11073Float, unit: Unit = .celsius, timestamp: GATTDateTime? = nil, temperatureType: UInt8? = nil) {
        self.temperature = temperature; self.unit = unit; self.timestamp = timestamp; self.temperatureType = temperatureType
    }

    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Temperature Measurement")
        let flags = try r.u8()
        temperature = IEEE11073Float(rawValue: try r.u32())
        unit = flags & 0x01 != 0 ? .fahrenheit : .celsius
        timestamp = flags & 0x02 != 0 ? try GATTDateTime(reading: &r) : nil
        temperatureType = flags & 0x04 != 0 ? try r.u8() : nil
        try r.end()
    }

    public var gattValue: [UInt8] {
        var flags: UInt8 = unit == .fahrenheit ? 1 : 0
        if timestamp != nil { flags |= 2 }
        if temperatureType != nil { flags |= 4 }
        var out: [UInt8] = [flags]
        out += temperature.rawValue.gattValue
        if let t = timestamp { out += t.gattValue }
        if let t = temperatureType { out.append(t) }
        return out
    }
}

/// Current Time (0x2A2B), Current Time Service 1.1, 3.1: Exact Time 256 (Date Time, Day of
/// Week 1-7 Monday first or 0 unknown, Fractions256) and Adjust Reason.
public struct CurrentTime: GATTDecodable, GATTEncodable, Sendable, Hashable {
    /// Adjust Reason bits.
    public struct AdjustReason: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let manualTimeUpdate = AdjustReason(rawValue: 0x01)
        public static let externalReferenceTimeUpdate = AdjustReason(rawValue: 0x02)
        public static let changeOfTimeZone = AdjustReason(rawValue: 0x04)
        public static let changeOfDST = AdjustReason(rawValue: 0x08)
    }
    public var dateTime: GATTDateTime
    public var dayOfWeek: UInt8
    /// 1/256 s.
    public var fractions256: UInt8
    public var adjustReason: AdjustReason

    public init(dateTime: GATTDateTime, dayOfWeek: UInt8, fractions256: UInt8, adjustReason: AdjustReason) {
        self.dateTime = dateTime; self.dayOfWeek = dayOfWeek; self.fractions256 = fractions256; self.adjustReason = adjustReason
    }

    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Current Time")
        dateTime = try GATTDateTime(reading: &r)
        dayOfWeek = try r.u8()
        guard dayOfWeek <= 7 else { throw .invalid(type: "Current Time", detail: "day of week \(dayOfWeek) is above 7") }
        fractions256 = try r.u8()
        adjustReason = AdjustReason(rawValue: try r.u8())
        try r.end()
    }
    public var gattValue: [UInt8] { dateTime.gattValue + [dayOfWeek, fractions256, adjustReason.rawValue] }
}

/// PnP ID (0x2A50), Device Information Service 1.1, 3.9: Vendor ID Source (1 Bluetooth SIG,
/// 2 USB Implementer's Forum), Vendor ID, Product ID, Product Version.
public struct PnPID: GATTDecodable, GATTEncodable, Sendable, Hashable {
    public var vendorIDSource: UInt8, vendorID: UInt16, productID: UInt16, productVersion: UInt16
    public init(vendorIDSource: UInt8, vendorID: UInt16, productID: UInt16, productVersion: UInt16) {
        self.vendorIDSource = vendorIDSource; self.vendorID = vendorID; self.productID = productID; self.productVersion = productVersion
    }
    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "PnP ID")
        vendorIDSource = try r.u8(); vendorID = try r.u16(); productID = try r.u16(); productVersion = try r.u16()
        try r.end()
    }
    public var gattValue: [UInt8] {
        var a: [UInt8] = [vendorIDSource]; a.appendLE16(vendorID); a.appendLE16(productID); a.appendLE16(productVersion); return a
    }
    /// The vendor's company name, when the source is the Bluetooth SIG.
    public var vendorName: String? { vendorIDSource == 1 ? AssignedNumbers.companyName(vendorID) : nil }
}

/// Appearance (0x2A01), Core Specification Supplement, Part A, 1.12: category (bits 6-15)
/// and subcategory (bits 0-5).
public struct Appearance: GATTDecodable, GATTEncodable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(gattValue: [UInt8]) throws(GATTValueError) { rawValue = try UInt16(gattValue: gattValue) }
    public var gattValue: [UInt8] { rawValue.gattValue }
    public var category: UInt16 { rawValue >> 6 }
    public var subcategory: UInt8 { UInt8(rawValue & 0x3F) }
    /// The assigned name ("Heart Rate Sensor: Heart Rate Belt").
    public var name: String? { AssignedNumbers.appearanceName(rawValue) }
    public var description: String { name ?? "Appearance \(rawValue.hex)" }
}
