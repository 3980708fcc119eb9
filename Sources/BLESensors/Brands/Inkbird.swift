import BLECore

/// Inkbird thermometers. IBS-TH1 (local name "sps") and IBS-TH2/P01B ("tps") send 9 bytes as
/// manufacturer data, the first two standing where the company identifier would: temperature
/// (0.01 °C, signed), humidity (0.01 %; 0 on models without it), the probe flag (1: the
/// temperature is an external probe's), two unknown bytes, battery (%), all little-endian.
/// The IBT-2X, 4XS and 6XS grill thermometers (local name "iBBQ") send their address and then
/// each probe's temperature (0.1 °C, signed; 0xFFFF when no probe is plugged in).
///
///     let reading = try Inkbird.decode(ad, keys: SensorKeys())   // reading?["temperature_probe_1"]
public enum Inkbird: SensorFormat {
    static let format = "Inkbird"

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let name = ad.localName, let m = ad.manufacturerData.last else { return nil }
        let d = [UInt8(m.companyID & 0xFF), UInt8(m.companyID >> 8)] + m.data
        switch name {
        case "sps", "tps":
            guard d.count == 9 else { throw .length(format, "IBS-TH manufacturer data (with its first two bytes)", expected: "9", got: d.count) }
            var v = SensorValues()
            v.append(d[4] == 1 ? "temperature_probe_1" : "temperature", scaled(d.le16s(0), 100))
            let humidity = Int(d.le16(2))
            if name == "sps" || humidity != 0 { v.append("humidity", scaled(humidity, 100)) }
            v.append("battery", .int(Int(d[7])))
            return SensorReading(format: format, brand: "Inkbird", model: name == "sps" ? "IBS-TH1" : "IBS-TH2/P01B", values: v.pairs)
        default:
            guard name.lowercased().contains("ibbq") else { return nil }
            let models = [12: "IBT-1", 14: "IBT-2X", 18: "IBT-4XS", 22: "IBT-6XS"]
            guard let model = models[d.count] else {
                throw .length(format, "iBBQ manufacturer data (with its first two bytes)", expected: "12, 14, 18 or 22", got: d.count)
            }
            var v = SensorValues()
            for (n, offset) in stride(from: 10, to: d.count, by: 2).enumerated() where d.le16(offset) != 0xFFFF {
                v.append("temperature_probe_\(n + 1)", scaled(d.le16s(offset), 10))
            }
            return SensorReading(format: format, brand: "Inkbird", model: model, values: v.pairs)
        }
    }
}
