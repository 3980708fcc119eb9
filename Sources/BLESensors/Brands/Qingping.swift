import BLECore

/// Qingping (ClearGrass) sensors: service data 0xFDCD holds a frame control byte, the device
/// type, the device's address (reversed), then type-length-value records: 0x01 temperature
/// (0.1 °C, signed) and humidity (0.1 %), 0x02 battery (%), 0x04 door (0 open, 1 closed, 2 left
/// open), 0x07 pressure (0.1 hPa), 0x08 motion and illuminance, 0x09 illuminance (lx),
/// 0x0F packet id, 0x11 light, 0x12 PM2.5 and PM10 (µg/m³), 0x13 CO2 (ppm); all little-endian.
///
///     let reading = try Qingping.decode(ad, keys: SensorKeys())   // reading?.model == "CGDN1"
public enum Qingping: SensorFormat {
    static let format = "Qingping"
    static let models: [UInt8: String] = [
        0x01: "CGG1", 0x04: "CGH1", 0x07: "CGG1", 0x09: "CGP1W", 0x0C: "CGD1", 0x0E: "CGDN1", 0x0F: "CGM1",
        0x10: "CGDK2", 0x12: "CGPR1", 0x15: "CGF1W", 0x16: "CGG1", 0x18: "CGP23W", 0x1E: "CGC1", 0x24: "CGDN1",
        0x33: "CGP22C", 0x4F: "CGG3", 0x5D: "CGP22C",
    ]

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.serviceData(uuid16: 0xFDCD) else { return nil }
        guard d.count >= 8 else { throw .length(format, "service data 0xFDCD header", expected: "8", got: d.count) }
        var v = SensorValues()
        var packetID: UInt64?
        var i = 8
        while i < d.count {
            guard i + 2 <= d.count else { throw SensorDecodeError(format: format, reason: "record header at offset \(i) runs past the end (\(d.count) bytes)") }
            let type = d[i], length = Int(d[i + 1])
            let start = i + 2
            guard start + length <= d.count else {
                throw SensorDecodeError(format: format, reason: "record 0x\(String(type, radix: 16)) at offset \(i) says \(length) bytes, \(d.count - start) follow")
            }
            func expect(_ n: Int) throws(SensorDecodeError) {
                if length != n { throw SensorDecodeError(format: format, reason: "record 0x\(String(type, radix: 16)) at offset \(i) has \(length) bytes, not \(n)") }
            }
            switch type {
            case 0x01:
                try expect(4)
                v.append("temperature", scaled(d.le16s(start), 10))
                v.append("humidity", scaled(Int(d.le16(start + 2)), 10))
            case 0x02:
                try expect(1)
                v.append("battery", .int(Int(d[start])))
            case 0x04:
                try expect(1)
                v.append("opening", .bool(d[start] != 1))
            case 0x07:
                try expect(2)
                v.append("pressure", scaled(Int(d.le16(start)), 10))
            case 0x08:
                try expect(4)
                v.append("motion", .bool(d[start] != 0))
                v.append("illuminance", .int(Int(d.le16(start + 1)) | Int(d[start + 3]) << 16))
            case 0x09:
                try expect(4)
                v.append("illuminance", .int(Int(d.le32(start))))
            case 0x0F:
                try expect(1)
                if packetID == nil { packetID = UInt64(d[start]) }
            case 0x11:
                try expect(1)
                v.append("light", .bool(d[start] != 0))
            case 0x12:
                try expect(4)
                v.append("pm25", .int(Int(d.le16(start))))
                v.append("pm10", .int(Int(d.le16(start + 2))))
            case 0x13:
                try expect(2)
                v.append("co2", .int(Int(d.le16(start))))
            default:
                break
            }
            i = start + length
        }
        return SensorReading(format: format, brand: "Qingping", model: models[d[1]], values: v.pairs, packetID: packetID)
    }
}
