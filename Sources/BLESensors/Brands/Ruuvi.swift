import BLECore
import BLEWire

/// RuuviTag data formats 3 (RAWv1) and 5 (RAWv2) in manufacturer data of company 0x0499
/// (docs.ruuvi.com, "Data formats"). RAWv2 values the tag marks "not available" are left out.
/// Acceleration is given in m/s² (1 g = 9.80665 m/s²) to two decimals, voltage in V.
///
///     let reading = try Ruuvi.decode(ad, keys: SensorKeys())   // nil unless format 3 or 5
public enum Ruuvi: SensorFormat {
    static let companyID: UInt16 = 0x0499
    static let format = "Ruuvi"

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.manufacturerData(companyID: companyID), let version = d.first else { return nil }
        switch version {
        case 3: return try rawV1(d)
        case 5: return try rawV2(d)
        default: return nil
        }
    }

    /// Milli-g to m/s², rounded to 0.01.
    static func acceleration(_ milliG: Int) -> JSONValue {
        .double((Double(milliG) * 9.80665 / 10).rounded() / 100)
    }

    /// Format 3: humidity (0.5 %), temperature (signed magnitude, integer and hundredths),
    /// pressure (Pa - 50000), acceleration x, y, z (mG), battery (mV); all big-endian.
    static func rawV1(_ d: [UInt8]) throws(SensorDecodeError) -> SensorReading {
        guard d.count == 14 else { throw .length(format, "RAWv1 (format 3) manufacturer data", expected: "14", got: d.count) }
        guard d[3] < 100 else {
            throw SensorDecodeError(format: format, reason: "RAWv1 temperature fraction \(d[3]) is not hundredths (0-99)")
        }
        var v = SensorValues()
        let hundredths = Int(d[2] & 0x7F) * 100 + Int(d[3])
        v.append("temperature", scaled(d[2] & 0x80 != 0 ? -hundredths : hundredths, 100))
        v.append("humidity", scaled(Int(d[1]), 2))
        v.append("pressure", scaled(Int(d.be16(4)) + 50_000, 100))
        v.append("acceleration_x", acceleration(d.be16s(6)))
        v.append("acceleration_y", acceleration(d.be16s(8)))
        v.append("acceleration_z", acceleration(d.be16s(10)))
        v.append("voltage", scaled(Int(d.be16(12)), 1000))
        return SensorReading(format: format, brand: "Ruuvi", model: "RuuviTag RAWv1", values: v.pairs)
    }

    /// Format 5: temperature (0.005 °C), humidity (0.0025 %), pressure (Pa - 50000),
    /// acceleration (mG), battery (11 bits, mV - 1600) and TX power (5 bits), movement counter,
    /// measurement sequence, MAC; all big-endian. The sequence number is the packet id.
    static func rawV2(_ d: [UInt8]) throws(SensorDecodeError) -> SensorReading {
        guard d.count == 24 else { throw .length(format, "RAWv2 (format 5) manufacturer data", expected: "24", got: d.count) }
        var v = SensorValues()
        let t = d.be16s(1)
        if t != -32768 { v.append("temperature", scaled(t, 200)) }
        let h = d.be16(3)
        if h != 0xFFFF { v.append("humidity", scaled(Int(h), 400)) }
        let p = d.be16(5)
        if p != 0xFFFF { v.append("pressure", scaled(Int(p) + 50_000, 100)) }
        for (key, offset) in [("acceleration_x", 7), ("acceleration_y", 9), ("acceleration_z", 11)] {
            let a = d.be16s(offset)
            if a != -32768 { v.append(key, acceleration(a)) }
        }
        let power = d.be16(13)
        if power >> 5 != 0x7FF { v.append("voltage", scaled(Int(power >> 5) + 1600, 1000)) }
        if d[15] != 0xFF { v.append("movement_counter", .int(Int(d[15]))) }
        let sequence = d.be16(16)
        return SensorReading(format: format, brand: "Ruuvi", model: "RuuviTag RAWv2", values: v.pairs,
                             packetID: sequence == 0xFFFF ? nil : UInt64(sequence))
    }
}
