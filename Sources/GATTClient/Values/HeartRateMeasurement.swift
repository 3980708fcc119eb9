/// Heart Rate Measurement (0x2A37), Heart Rate Service 1.0, 3.1.1: Flags, then the heart
/// rate (8 or 16 bits), Energy Expended (kJ) and RR-Intervals (1/1024 s) when flagged.
///
///     for try await m in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) { print(m.beatsPerMinute) }
public struct HeartRateMeasurement: GATTDecodable, GATTEncodable, Sendable, Hashable {
    /// Sensor Contact Status (flags bits 1-2).
    public enum SensorContact: Sendable, Hashable {
        case notSupported, notDetected, detected
    }

    public var beatsPerMinute: UInt16
    public var sensorContact: SensorContact
    /// Energy expended in kilojoules, when present (flags bit 3).
    public var energyExpended: UInt16?
    /// RR-Intervals in units of 1/1024 s, oldest first (flags bit 4).
    public var rrIntervals: [UInt16]

    public init(beatsPerMinute: UInt16, sensorContact: SensorContact = .notSupported, energyExpended: UInt16? = nil, rrIntervals: [UInt16] = []) {
        self.beatsPerMinute = beatsPerMinute; self.sensorContact = sensorContact
        self.energyExpended = energyExpended; self.rrIntervals = rrIntervals
    }

    /// RR-Intervals in seconds.
    public var rrIntervalSeconds: [Double] { rrIntervals.map { Double($0) / 1024 } }

    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Heart Rate Measurement")
        let flags = try r.u8()
        beatsPerMinute = flags & 0x01 != 0 ? try r.u16() : UInt16(try r.u8())
        switch (flags >> 1) & 0x03 {
        case 0b11: sensorContact = .detected
        case 0b10: sensorContact = .notDetected
        default: sensorContact = .notSupported
        }
        energyExpended = flags & 0x08 != 0 ? try r.u16() : nil
        var rr: [UInt16] = []
        if flags & 0x10 != 0 {
            guard r.remaining % 2 == 0 else {
                throw .invalid(type: "Heart Rate Measurement", detail: "RR-Interval field has an odd length \(r.remaining)")
            }
            rr.reserveCapacity(r.remaining / 2)
            while r.remaining > 0 { rr.append(try r.u16()) }
        }
        rrIntervals = rr
        try r.end()
    }

    public var gattValue: [UInt8] {
        var flags: UInt8 = beatsPerMinute > 0xFF ? 0x01 : 0
        switch sensorContact {
        case .notSupported: break
        case .notDetected: flags |= 0b100
        case .detected: flags |= 0b110
        }
        if energyExpended != nil { flags |= 0x08 }
        if !rrIntervals.isEmpty { flags |= 0x10 }
        var out: [UInt8] = [flags]
        if beatsPerMinute > 0xFF { out.appendLE16(beatsPerMinute) } else { out.append(UInt8(beatsPerMinute)) }
        if let e = energyExpended { out.appendLE16(e) }
        for v in rrIntervals { out.appendLE16(v) }
        return out
    }
}

/// Battery Level (0x2A19), Battery Service 1.0, 3.1: a percentage, 0-100.
public struct BatteryLevel: GATTDecodable, GATTEncodable, Sendable, Hashable {
    public var percent: UInt8
    public init(percent: UInt8) { self.percent = percent }
    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Battery Level")
        percent = try r.u8()
        try r.end()
        guard percent <= 100 else { throw .invalid(type: "Battery Level", detail: "\(percent) % is above 100") }
    }
    public var gattValue: [UInt8] { [percent] }
}

/// Body Sensor Location (0x2A38), Heart Rate Service 1.0, 3.2.1.
public enum BodySensorLocation: UInt8, GATTDecodable, GATTEncodable, Sendable, Hashable, CustomStringConvertible {
    case other = 0, chest = 1, wrist = 2, finger = 3, hand = 4, earLobe = 5, foot = 6

    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var r = ValueReader(gattValue, "Body Sensor Location")
        let raw = try r.u8()
        try r.end()
        guard let v = BodySensorLocation(rawValue: raw) else {
            throw .invalid(type: "Body Sensor Location", detail: "reserved value \(raw)")
        }
        self = v
    }
    public var gattValue: [UInt8] { [rawValue] }

    /// The specification's name ("Ear Lobe").
    public var name: String {
        switch self {
        case .other: return "Other"
        case .chest: return "Chest"
        case .wrist: return "Wrist"
        case .finger: return "Finger"
        case .hand: return "Hand"
        case .earLobe: return "Ear Lobe"
        case .foot: return "Foot"
        }
    }
    public var description: String { name }
}
