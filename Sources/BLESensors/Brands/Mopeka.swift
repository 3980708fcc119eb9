import BLECore

/// Mopeka tank sensors (Pro Check, Pro Plus, Pro-200, Lippert BottleCheck, TD40/TD200):
/// 10 bytes of manufacturer data of company 0x0059 in advertisements that list service 0xFEE5.
/// Byte 0 the hardware id, byte 1 the battery (1/32 V), byte 2 the temperature (°C + 40, bits
/// 6-0), bytes 3-4 the echo time (14 bits, little-endian) and the reading quality (bits 7-6 of
/// byte 4, 0-3). The tank level is the liquid's height in mm for propane (the echo time times
/// a speed of sound that depends on the temperature), left out when the quality is 0.
///
///     let reading = try Mopeka.decode(ad, keys: SensorKeys())   // reading?["tank_level"]
public enum Mopeka: SensorFormat {
    static let format = "Mopeka"
    static let models: [UInt8: String] = [
        0x03: "M1017 Pro Check", 0x04: "Pro-200", 0x05: "Pro Check H2O", 0x06: "M1017 Lippert BottleCheck",
        0x08: "M1015 Pro Plus", 0x09: "M1015 Pro Plus Cellular", 0x0A: "TD40/TD200", 0x0B: "TD40/TD200 Cellular",
        0x0C: "M1017 Pro Check Universal", 0x12: "Pro-200B",
    ]

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.manufacturerData(companyID: 0x0059), ad.advertises(uuid16: 0xFEE5) else { return nil }
        guard d.count == 10 else { throw .length(format, "manufacturer data of company 0x0059", expected: "10", got: d.count) }
        guard let model = models[d[0]] else {
            throw SensorDecodeError(format: format, reason: "unknown hardware id 0x\(String(d[0], radix: 16))")
        }
        var v = SensorValues()
        let rawTemperature = Int(d[2] & 0x7F)
        v.append("temperature", .int(rawTemperature - 40))
        let quality = Int(d[4] >> 6)
        if quality > 0 {
            let echo = Double(d.le16(3) & 0x3FFF)
            let t = Double(rawTemperature)
            v.append("tank_level", .int(Int(echo * (0.573045 - 0.002822 * t - 0.00000535 * t * t))))
        }
        v.append("reading_quality", .int(Int((Double(quality) * 100 / 3).rounded())))
        let volts = Double(d[1]) / 32
        v.append("battery", .double((min(100, max(0, (volts - 2.2) / 0.65 * 100)) * 10).rounded() / 10))
        v.append("voltage", .double(volts))
        return SensorReading(format: format, brand: "Mopeka", model: model, values: v.pairs)
    }
}
