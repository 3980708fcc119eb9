import BLECore

/// Govee thermometers, hygrometers, the H5106 air monitor and the H5055 grill thermometer, from
/// their manufacturer data. Govee's company identifiers are not registered ones, so the model is
/// found by identifier and length (0xEC88: H5072/H5075, H5074, H5051; 0x8801: H5179) or by the
/// local name (H5101/H5102/H5104/H5105/H5174/H5177, H5106), or, for the H5055, by its 0x5550
/// service UUID; the iBeacon Govee appends to some payloads ("INTELLI_ROCKS") is dropped.
///
///     let reading = try Govee.decode(ad, keys: SensorKeys())   // reading?.model == "H5075"
public enum Govee: SensorFormat {
    static let format = "Govee"
    /// Models sending the 3-byte packed temperature and humidity after two bytes.
    static let packedAfterTwo = ["H5100", "H5101", "H5102", "H5103", "H5104", "H5105", "H5174", "H5177"]

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        let name = ad.localName ?? ""
        let isH5055 = ad.advertises(uuid16: 0x5550)
        for m in ad.manufacturerData where m.companyID != 0x004C {
            var d = m.data
            if d.count > 25, d[(d.count - 21)..<(d.count - 8)].elementsEqual("INTELLI_ROCKS".utf8) {
                d.removeLast(25)
            }
            if let reading = try decode(companyID: m.companyID, d, name: name, isH5055: isH5055) { return reading }
        }
        return nil
    }

    static func decode(companyID: UInt16, _ d: [UInt8], name: String, isH5055: Bool) throws(SensorDecodeError) -> SensorReading? {
        if isH5055 || name.contains("H5055") {
            guard d.count == 20 else { throw .length(format, "H5055 manufacturer data", expected: "20", got: d.count) }
            return grill(d)
        }
        if companyID == 0xEC88 {
            switch d.count {
            case 6:
                let model = name.contains("H5072") ? "H5072" : name.contains("H5075") ? "H5075" : "H5072/H5075"
                return packed(d, at: 1, battery: d[4], model: model)
            case 7: return littleEndian(d, at: 1, model: "H5074")
            case 9: return littleEndian(d, at: 1, model: name.contains("H5052") ? "H5052" : name.contains("H5071") ? "H5071" : "H5051")
            default: throw .length(format, "manufacturer data of company 0xEC88", expected: "6, 7 or 9", got: d.count)
            }
        }
        if companyID == 0x8801 || name.contains("H5179") {
            guard d.count == 9 else { throw .length(format, "H5179 manufacturer data", expected: "9", got: d.count) }
            return littleEndian(d, at: 4, model: "H5179")
        }
        if name.contains("H5106") {
            guard d.count == 6 else { throw .length(format, "H5106 manufacturer data", expected: "6", got: d.count) }
            return airQuality(d)
        }
        if let model = packedAfterTwo.first(where: { name.contains($0) }) {
            guard d.count == 6 else { throw .length(format, "\(model) manufacturer data", expected: "6", got: d.count) }
            return packed(d, at: 2, battery: d[5], model: model)
        }
        return nil
    }

    /// Three big-endian bytes: bit 23 the sign, the rest temperature × 10000 + humidity × 10
    /// (temperature kept to tenths as the display shows it); the battery byte's bit 7 flags a
    /// sensor error, when temperature and humidity are left out.
    static func packed(_ d: [UInt8], at i: Int, battery: UInt8, model: String) -> SensorReading {
        var v = SensorValues()
        if battery & 0x80 == 0 {
            let raw = d.be24(i)
            let magnitude = Int(raw & 0x7F_FFFF)
            v.append("temperature", scaled(raw & 0x80_0000 != 0 ? -(magnitude / 1000) : magnitude / 1000, 10))
            v.append("humidity", scaled(magnitude % 1000, 10))
        }
        v.append("battery", .int(Int(battery & 0x7F)))
        return SensorReading(format: format, brand: "Govee", model: model, values: v.pairs)
    }

    /// Little-endian temperature (signed, hundredths), humidity (hundredths) and battery (%).
    static func littleEndian(_ d: [UInt8], at i: Int, model: String) -> SensorReading {
        var v = SensorValues()
        v.append("temperature", scaled(d.le16s(i), 100))
        v.append("humidity", scaled(Int(d.le16(i + 2)), 100))
        v.append("battery", .int(Int(d[i + 4])))
        return SensorReading(format: format, brand: "Govee", model: model, values: v.pairs)
    }

    /// H5106: four big-endian bytes after two; bit 31 the sign, then temperature × 10^7 +
    /// humidity × 10^4 + PM2.5 (µg/m³), temperature and humidity kept to tenths.
    static func airQuality(_ d: [UInt8]) -> SensorReading {
        let raw = d.be32(2)
        let magnitude = Int(raw & 0x7FFF_FFFF)
        var v = SensorValues()
        v.append("temperature", scaled(raw & 0x8000_0000 != 0 ? -(magnitude / 1_000_000) : magnitude / 1_000_000, 10))
        v.append("humidity", scaled(magnitude % 1_000_000 / 1000, 10))
        v.append("pm25", .int(magnitude % 1000))
        return SensorReading(format: format, brand: "Govee", model: "H5106", values: v.pairs)
    }

    /// H5055: battery in byte 2; byte 3's top two bits choose the probe pair (1-2, 3-4, 5-6)
    /// and its low bits which of the pair are plugged in; each probe's temperature (°C,
    /// little-endian, 0xFFFF when absent) at bytes 5 and 12.
    static func grill(_ d: [UInt8]) -> SensorReading {
        let pair = Int(d[3] >> 6)
        var v = SensorValues()
        if pair < 3 {
            for (n, offset) in [(0, 5), (1, 12)] {
                let number = pair * 2 + n + 1
                let t = d.le16s(offset)
                if d[3] & UInt8(1 << (number - 1)) != 0, t != -1 { v.append("temperature_probe_\(number)", .int(t)) }
            }
        }
        v.append("battery", .int(Int(d[2] & 0x7F)))
        return SensorReading(format: format, brand: "Govee", model: "H5055", values: v.pairs)
    }
}
