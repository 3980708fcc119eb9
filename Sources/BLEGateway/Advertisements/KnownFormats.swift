import BLECore

/// Values decoded from advertising formats the gateway knows. Every decoder is total:
/// data of the wrong length or kind gives nil, never a trap.
public enum KnownFormats {
    static let batteryService = BluetoothUUID(uuid16: 0x180F)
    static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)
    static let eddystone = BluetoothUUID(uuid16: 0xFEAA)
    static let temperature = BluetoothUUID(uuid16: 0x2A6E)
    static let humidity = BluetoothUUID(uuid16: 0x2A6F)
    static let pressure = BluetoothUUID(uuid16: 0x2A6D)
    static let apple: UInt16 = 0x004C

    /// The decoded values of one advertisement, as JSON pairs (empty when nothing applies).
    public static func decode(_ data: AdvertisingData) -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        let serviceData = data.serviceData
        // Battery Level (0...100 %), carried as service data of the Battery service or of the
        // Battery Level characteristic (Battery Service 1.1, 3.1).
        if let value = serviceData[batteryService] ?? serviceData[batteryLevel], value.count == 1, value[0] <= 100 {
            out.append(("battery", .int(Int(value[0]))))
        }
        // Environmental Sensing characteristics as service data (ESS 3.1, GATT Specification
        // Supplement: Temperature sint16 0.01 °C, Humidity uint16 0.01 %, Pressure uint32 0.1 Pa).
        if let v = serviceData[temperature], v.count == 2 {
            let raw = Int16(bitPattern: UInt16(v[0]) | UInt16(v[1]) << 8)
            if raw != Int16.min { out.append(("temperature", .double(Double(raw) / 100))) }
        }
        if let v = serviceData[humidity], v.count == 2 {
            let raw = UInt16(v[0]) | UInt16(v[1]) << 8
            if raw != 0xFFFF { out.append(("humidity", .double(Double(raw) / 100))) }
        }
        if let v = serviceData[pressure], v.count == 4 {
            let raw = UInt32(v[0]) | UInt32(v[1]) << 8 | UInt32(v[2]) << 16 | UInt32(v[3]) << 24
            out.append(("pressure", .double(Double(raw) / 10)))
        }
        for m in data.manufacturerData where m.companyID == apple {
            if let beacon = iBeacon(m.data) { out.append(("ibeacon", beacon)) }
        }
        if let frame = serviceData[eddystone], let e = eddystoneFrame(frame) { out.append(("eddystone", e)) }
        return out
    }

    /// Apple iBeacon: 0x02 0x15, proximity UUID (16), major (BE), minor (BE), measured power.
    static func iBeacon(_ d: [UInt8]) -> JSONValue? {
        guard d.count == 23, d[0] == 0x02, d[1] == 0x15 else { return nil }
        let uuid = Array(d[2..<18]).hexUpper
        let parts = [uuid.prefix(8), uuid.dropFirst(8).prefix(4), uuid.dropFirst(12).prefix(4), uuid.dropFirst(16).prefix(4), uuid.dropFirst(20)]
        return .object([
            ("uuid", .string(parts.joined(separator: "-"))),
            ("major", .int(Int(d[18]) << 8 | Int(d[19]))),
            ("minor", .int(Int(d[20]) << 8 | Int(d[21]))),
            ("txPower", .int(Int(Int8(bitPattern: d[22])))),
        ])
    }

    static let urlSchemes = ["http://www.", "https://www.", "http://", "https://"]
    static let urlExpansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]

    /// Eddystone service data (UUID 0xFEAA): UID (0x00), URL (0x10) and unencrypted TLM (0x20) frames.
    static func eddystoneFrame(_ d: [UInt8]) -> JSONValue? {
        guard let type = d.first else { return nil }
        switch type {
        case 0x00 where d.count == 18 || d.count == 20:
            return .object([("frame", .string("uid")), ("txPower", .int(Int(Int8(bitPattern: d[1])))),
                            ("namespace", .string(Array(d[2..<12]).hexUpper)), ("instance", .string(Array(d[12..<18]).hexUpper))])
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
            let millivolts = Int(d[2]) << 8 | Int(d[3])
            let temperature = Double(Int16(bitPattern: UInt16(d[4]) << 8 | UInt16(d[5]))) / 256
            let count = UInt32(d[6]) << 24 | UInt32(d[7]) << 16 | UInt32(d[8]) << 8 | UInt32(d[9])
            let uptime = UInt32(d[10]) << 24 | UInt32(d[11]) << 16 | UInt32(d[12]) << 8 | UInt32(d[13])
            return .object([("frame", .string("tlm")), ("batteryMillivolts", .int(millivolts)), ("temperature", .double(temperature)),
                            ("advertisements", .int(Int(count))), ("uptimeSeconds", .double(Double(uptime) / 10))])
        default:
            return nil
        }
    }
}
