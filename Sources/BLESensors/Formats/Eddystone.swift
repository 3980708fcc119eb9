import BLECore
import BLEWire

/// Eddystone service data (UUID 0xFEAA): UID (0x00), URL (0x10) and unencrypted TLM (0x20)
/// frames, published nested under `eddystone`. Other frames or lengths are not decoded.
///
///     let reading = try Eddystone.decode(ad, keys: SensorKeys())
public enum Eddystone: SensorFormat {
    static let urlSchemes = ["http://www.", "https://www.", "http://", "https://"]
    static let urlExpansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.serviceData(uuid16: 0xFEAA), let frame = frame(d) else { return nil }
        return SensorReading(format: "Eddystone", values: [("eddystone", frame)])
    }

    static func frame(_ d: [UInt8]) -> JSONValue? {
        guard let type = d.first else { return nil }
        func hex(_ r: Range<Int>) -> String { Array(d[r]).hexString(separator: "").uppercased() }
        switch type {
        case 0x00 where d.count == 18 || d.count == 20:
            return .object([("frame", .string("uid")), ("txPower", .int(Int(Int8(bitPattern: d[1])))),
                            ("namespace", .string(hex(2..<12))), ("instance", .string(hex(12..<18)))])
        case 0x10 where d.count >= 3 && d.count <= 20 && Int(d[2]) < urlSchemes.count:
            var url = urlSchemes[Int(d[2])]
            for b in d[3...] {
                if Int(b) < urlExpansions.count {
                    url += urlExpansions[Int(b)]
                } else if b > 0x20 && b < 0x7F {
                    url.unicodeScalars.append(Unicode.Scalar(b))
                } else {
                    return nil
                }
            }
            return .object([("frame", .string("url")), ("txPower", .int(Int(Int8(bitPattern: d[1])))), ("url", .string(url))])
        case 0x20 where d.count == 14 && d[1] == 0x00:
            let millivolts = Int(SensorBytes.unsignedBE(d, 2, 2))
            let temperature = Double(Int16(bitPattern: UInt16(SensorBytes.unsignedBE(d, 4, 2)))) / 256
            let count = SensorBytes.unsignedBE(d, 6, 4)
            let uptime = SensorBytes.unsignedBE(d, 10, 4)
            return .object([("frame", .string("tlm")), ("batteryMillivolts", .int(millivolts)), ("temperature", .double(temperature)),
                            ("advertisements", .int(Int(count))), ("uptimeSeconds", .double(Double(uptime) / 10))])
        default:
            return nil
        }
    }
}
