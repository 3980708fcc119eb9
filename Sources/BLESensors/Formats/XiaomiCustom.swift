import BLECore

/// The custom firmware formats of Xiaomi thermometers (LYWSD03MMC, MHO-C401, CGG1) as service data
/// of UUID 0x181A: ATC1441's 13 bytes (MAC, temperature sint16 BE 0.1 °C, humidity %, battery %,
/// battery mV uint16 BE, frame counter) and pvvx's 15 bytes (MAC reversed, temperature sint16 LE
/// 0.01 °C, humidity uint16 LE 0.01 %, battery mV uint16 LE, battery %, counter, flags).
/// Other lengths are not these formats.
///
///     let reading = try XiaomiCustom.decode(ad, keys: SensorKeys())
public enum XiaomiCustom: SensorFormat {
    static let uuid: UInt16 = 0x181A

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.serviceData(uuid16: uuid) else { return nil }
        switch d.count {
        case 13:
            var r = SensorReading(format: "ATC1441", packetID: UInt64(d[12]))
            r.values = [
                ("temperature", SensorBytes.scaled(Int64(Int16(bitPattern: UInt16(SensorBytes.unsignedBE(d, 6, 2)))), divisor: 10)),
                ("humidity", .int(Int(d[8]))),
                ("battery", .int(Int(d[9]))),
                ("voltage", SensorBytes.scaled(Int64(SensorBytes.unsignedBE(d, 10, 2)), divisor: 1000)),
            ]
            return r
        case 15:
            var r = SensorReading(format: "pvvx", packetID: UInt64(d[13]))
            r.values = [
                ("temperature", SensorBytes.scaled(SensorBytes.signedLE(d, 6, 2), divisor: 100)),
                ("humidity", SensorBytes.scaled(Int64(SensorBytes.unsignedLE(d, 8, 2)), divisor: 100)),
                ("battery", .int(Int(d[12]))),
                ("voltage", SensorBytes.scaled(Int64(SensorBytes.unsignedLE(d, 10, 2)), divisor: 1000)),
            ]
            return r
        default:
            return nil
        }
    }
}
