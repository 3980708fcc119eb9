import BLECore

/// SwitchBot meters, contact and motion sensors, Plug Mini and Bot. The device type is the low
/// seven bits of the first byte of service data 0xFD3D (0x0D00 on older firmware); the
/// manufacturer data of company 0x0969 (the device's address, then state) adds to it, and the
/// two may come in the report and the scan response: they are merged. Types other than these
/// are not decoded (nil).
///
///     let reading = try SwitchBot.decode(ad, keys: SensorKeys())   // reading?.model == "Meter Plus"
public enum SwitchBot: SensorFormat {
    static let format = "SwitchBot"
    static let companyID: UInt16 = 0x0969

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let service = ad.serviceData(uuid16: 0xFD3D) ?? ad.serviceData(uuid16: 0x0D00), let first = service.first else { return nil }
        let maker = ad.manufacturerData(companyID: companyID)
        var v = SensorValues()
        let model: String
        switch first & 0x7F {
        case 0x54, 0x69, 0x77: // "T" Meter, "i" Meter Plus, "w" Outdoor Meter
            model = first & 0x7F == 0x54 ? "Meter" : first & 0x7F == 0x69 ? "Meter Plus" : "Outdoor Meter"
            try meter(service, maker, into: &v)
        case 0x64: // "d"
            model = "Contact Sensor"
            try contact(service, maker, into: &v)
        case 0x73: // "s"
            model = "Motion Sensor"
            try motion(service, maker, into: &v)
        case 0x67, 0x6A: // "g" US, "j" JP
            model = first & 0x7F == 0x67 ? "Plug Mini (US)" : "Plug Mini (JP)"
            try plug(maker, into: &v)
        case 0x48: // "H"
            model = "Bot"
            try bot(service, into: &v)
        default:
            return nil
        }
        return SensorReading(format: format, brand: "SwitchBot", model: model, values: v.pairs)
    }

    static func battery(_ service: [UInt8], into v: inout SensorValues) {
        if service.count >= 3 { v.append("battery", .int(Int(service[2] & 0x7F))) }
    }

    /// Temperature and humidity in three bytes: tenths in bits 3-0 of the first, the sign (set
    /// for positive) and whole degrees in the second, humidity (%) in bits 6-0 of the third.
    /// Manufacturer data bytes 8-10 when present, else service data bytes 3-5 (the Outdoor
    /// Meter's service data holds only the battery).
    static func meter(_ service: [UInt8], _ maker: [UInt8]?, into v: inout SensorValues) throws(SensorDecodeError) {
        let t: ArraySlice<UInt8>?
        if let maker, maker.count >= 11 { t = maker[8..<11] } else if service.count >= 6 { t = service[3..<6] } else { t = nil }
        if let t {
            let i = t.startIndex
            let tenths = Int(t[i + 1] & 0x7F) * 10 + Int(t[i] & 0x0F)
            v.append("temperature", scaled(t[i + 1] & 0x80 != 0 ? tenths : -tenths, 10))
            v.append("humidity", .int(Int(t[i + 2] & 0x7F)))
        } else if service.count < 3 {
            throw SensorDecodeError(format: format, reason: "meter: service data of \(service.count) bytes (needs 3, or 6 with temperature) and manufacturer data of \(maker?.count ?? 0) (needs 11)")
        }
        battery(service, into: &v)
    }

    /// Contact sensor: service data byte 1 bit 6 motion, byte 3 bit 0 light, bit 1 open, bit 2
    /// open past its timeout; manufacturer data byte 7 carries the same (bits 7, 6, 4, 5) and wins.
    static func contact(_ service: [UInt8], _ maker: [UInt8]?, into v: inout SensorValues) throws(SensorDecodeError) {
        if let maker, maker.count >= 13 {
            v.append("motion", .bool(maker[7] & 0x80 != 0))
            v.append("opening", .bool(maker[7] & 0x30 != 0))
            v.append("light", .bool(maker[7] & 0x40 != 0))
        } else if service.count >= 9 {
            v.append("motion", .bool(service[1] & 0x40 != 0))
            v.append("opening", .bool(service[3] & 0x06 != 0))
            v.append("light", .bool(service[3] & 0x01 != 0))
        } else {
            throw SensorDecodeError(format: format, reason: "contact sensor: service data of \(service.count) bytes (needs 9) and manufacturer data of \(maker?.count ?? 0) (needs 13)")
        }
        battery(service, into: &v)
    }

    /// Motion sensor: service data byte 1 bit 6 motion, byte 5 bit 1 light; manufacturer data
    /// byte 7 bits 6 and 5 carry the same and win.
    static func motion(_ service: [UInt8], _ maker: [UInt8]?, into v: inout SensorValues) throws(SensorDecodeError) {
        if let maker, maker.count >= 8 {
            v.append("motion", .bool(maker[7] & 0x40 != 0))
            v.append("light", .bool(maker[7] & 0x20 != 0))
        } else if service.count >= 6 {
            v.append("motion", .bool(service[1] & 0x40 != 0))
            v.append("light", .bool(service[5] & 0x02 != 0))
        } else {
            throw SensorDecodeError(format: format, reason: "motion sensor: service data of \(service.count) bytes (needs 6) and manufacturer data of \(maker?.count ?? 0) (needs 8)")
        }
        battery(service, into: &v)
    }

    /// Plug Mini: manufacturer data byte 7 is 0x80 when on, byte 9 the Wi-Fi RSSI (negated),
    /// bytes 10-11 the power in tenths of a watt (big-endian, 15 bits).
    static func plug(_ maker: [UInt8]?, into v: inout SensorValues) throws(SensorDecodeError) {
        guard let maker, maker.count >= 12 else {
            throw SensorDecodeError(format: format, reason: "Plug Mini: manufacturer data of company 0x0969 needs 12 bytes, got \(maker?.count ?? 0)")
        }
        v.append("power_on", .bool(maker[7] == 0x80))
        v.append("power", scaled(Int(maker.be16(10) & 0x7FFF), 10))
        v.append("signal_strength", .int(-Int(maker[9])))
    }

    /// Bot: service data byte 1 bit 7 set in switch mode, where bit 6 set means off; in press
    /// mode the Bot has no on/off state.
    static func bot(_ service: [UInt8], into v: inout SensorValues) throws(SensorDecodeError) {
        guard service.count >= 3 else { throw .length(format, "Bot service data", expected: "3", got: service.count) }
        if service[1] & 0x80 != 0 { v.append("power_on", .bool(service[1] & 0x40 == 0)) }
        battery(service, into: &v)
    }
}
