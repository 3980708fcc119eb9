import BLECore
import BLEWire

/// Apple iBeacon: manufacturer data of company 0x004C holding 0x02 0x15, the proximity UUID (16),
/// major and minor (big-endian) and the measured power; published nested under `ibeacon`.
///
///     let reading = try IBeacon.decode(ad, keys: SensorKeys())
public enum IBeacon: SensorFormat {
    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        for m in ad.manufacturerData where m.companyID == 0x004C {
            let d = m.data
            guard d.count == 23, d[0] == 0x02, d[1] == 0x15 else { continue }
            let uuid = Array(d[2..<18]).hexString(separator: "").uppercased()
            let parts = [uuid.prefix(8), uuid.dropFirst(8).prefix(4), uuid.dropFirst(12).prefix(4), uuid.dropFirst(16).prefix(4), uuid.dropFirst(20)]
            let beacon = JSONValue.object([
                ("uuid", .string(parts.joined(separator: "-"))),
                ("major", .int(Int(d[18]) << 8 | Int(d[19]))),
                ("minor", .int(Int(d[20]) << 8 | Int(d[21]))),
                ("txPower", .int(Int(Int8(bitPattern: d[22])))),
            ])
            return SensorReading(format: "iBeacon", values: [("ibeacon", beacon)])
        }
        return nil
    }
}
