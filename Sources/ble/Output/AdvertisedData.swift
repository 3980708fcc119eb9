import BLECore
import BLEWire

/// Service data and beacons of an advertisement, for `ble scan`: every Service Data
/// structure in order (UUID and hex), Eddystone frames in FEAA service data decoded (UID,
/// URL, TLM, EID; Eddystone protocol specification, github.com/google/eddystone), and an
/// Apple iBeacon in manufacturer data (company 0x004C, type 0x02, length 0x15).
///
///     AdvertisedData.serviceData(ad)   // [(FEAA, [0x10, 0xE8, 0x03, ...])]
///     AdvertisedData.beacon(ad)        // "Eddystone-URL https://example.com tx@0m -24 dBm"
enum AdvertisedData {
    /// Service Data structures (all UUID widths) in the order advertised.
    static func serviceData(_ ad: AdvertisingData) -> [(uuid: BluetoothUUID, data: [UInt8])] {
        ad.structures.compactMap { s in
            switch s {
            case .serviceData16(let u, let d): return (BluetoothUUID(uuid16: u), d)
            case .serviceData32(let u, let d): return (BluetoothUUID(uuid32: u), d)
            case .serviceData128(let u, let d): return (BluetoothUUID(uuid128: u), d)
            default: return nil
            }
        }
    }

    /// A decoded beacon: a one-line summary (exact text; escape it for a terminal) and its fields.
    struct Beacon {
        var summary: String
        var json: JSONValue
    }

    static let eddystoneUUID = BluetoothUUID(uuid16: 0xFEAA)

    static func beacons(_ ad: AdvertisingData) -> [Beacon] {
        var out: [Beacon] = []
        for (uuid, data) in serviceData(ad) where uuid == eddystoneUUID {
            if let b = eddystone(data) { out.append(b) }
        }
        for m in ad.manufacturerData where m.companyID == 0x004C {
            if let b = iBeacon(m.data) { out.append(b) }
        }
        return out
    }

    /// Eddystone frames: the first byte is the frame type.
    static func eddystone(_ d: [UInt8]) -> Beacon? {
        guard let type = d.first else { return nil }
        switch type {
        case 0x00 where d.count >= 18:   // UID: tx power at 0 m, 10-byte namespace, 6-byte instance
            let tx = Int8(bitPattern: d[1])
            let namespace = hexString(d[2..<12]), instance = hexString(d[12..<18])
            return Beacon(summary: "Eddystone-UID namespace \(namespace) instance \(instance) tx@0m \(tx) dBm",
                          json: .object([("type", .string("eddystone-uid")), ("namespace", .string(namespace)),
                                         ("instance", .string(instance)), ("txPowerAt0m", .int(Int(tx)))]))
        case 0x10 where d.count >= 3:    // URL: tx power at 0 m, scheme prefix, encoded URL
            let tx = Int8(bitPattern: d[1])
            guard let url = eddystoneURL(scheme: d[2], encoded: d[3...]) else { return nil }
            return Beacon(summary: "Eddystone-URL \(url) tx@0m \(tx) dBm",
                          json: .object([("type", .string("eddystone-url")), ("url", .string(url)), ("txPowerAt0m", .int(Int(tx)))]))
        case 0x20 where d.count >= 14 && d[1] == 0x00:   // TLM version 0 (unencrypted), big-endian fields
            let battery = Int(d[2]) << 8 | Int(d[3])
            let temperature = Double(Int16(bitPattern: UInt16(d[4]) << 8 | UInt16(d[5]))) / 256
            let count = (6..<10).reduce(0) { $0 << 8 | Int(d[$1]) }
            let uptime = (10..<14).reduce(0) { $0 << 8 | Int(d[$1]) }
            let temp = temperature == -128 ? "unsupported" : "\(temperature) C"
            return Beacon(summary: "Eddystone-TLM battery \(battery) mV temperature \(temp) advertisements \(count) uptime \(uptime / 10) s",
                          json: .object([("type", .string("eddystone-tlm")), ("batteryMillivolts", .int(battery)),
                                         ("temperature", temperature == -128 ? .null : .double(temperature)),
                                         ("advertisingCount", .int(count)), ("uptimeDeciseconds", .int(uptime))]))
        case 0x30 where d.count >= 10:   // EID: tx power at 0 m, 8-byte ephemeral identifier
            let tx = Int8(bitPattern: d[1])
            let eid = hexString(d[2..<10])
            return Beacon(summary: "Eddystone-EID \(eid) tx@0m \(tx) dBm",
                          json: .object([("type", .string("eddystone-eid")), ("eid", .string(eid)), ("txPowerAt0m", .int(Int(tx)))]))
        default:
            return nil
        }
    }

    static let urlSchemes = ["http://www.", "https://www.", "http://", "https://"]
    static let urlExpansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]

    /// The URL of an Eddystone-URL frame, or nil when a byte is outside the encoding
    /// (printable ASCII 0x21-0x7E, or an expansion code 0x00-0x0D).
    static func eddystoneURL(scheme: UInt8, encoded: ArraySlice<UInt8>) -> String? {
        guard Int(scheme) < urlSchemes.count else { return nil }
        var url = urlSchemes[Int(scheme)]
        for b in encoded {
            if Int(b) < urlExpansions.count { url += urlExpansions[Int(b)] }
            else if (0x21...0x7E).contains(b) { url.unicodeScalars.append(Unicode.Scalar(b)) }
            else { return nil }
        }
        return url
    }

    /// iBeacon: 0x02 0x15, 16-byte proximity UUID, major and minor (big-endian), measured power at 1 m.
    static func iBeacon(_ d: [UInt8]) -> Beacon? {
        guard d.count == 23, d[0] == 0x02, d[1] == 0x15 else { return nil }
        let u = d[2..<18].map { hex($0, width: 2) }
        let uuid = [u[0..<4], u[4..<6], u[6..<8], u[8..<10], u[10..<16]].map { $0.joined() }.joined(separator: "-")
        let major = Int(d[18]) << 8 | Int(d[19]), minor = Int(d[20]) << 8 | Int(d[21])
        let power = Int8(bitPattern: d[22])
        return Beacon(summary: "iBeacon \(uuid) major \(major) minor \(minor) tx@1m \(power) dBm",
                      json: .object([("type", .string("ibeacon")), ("uuid", .string(uuid)), ("major", .int(major)),
                                     ("minor", .int(minor)), ("measuredPower", .int(Int(power)))]))
    }
}
