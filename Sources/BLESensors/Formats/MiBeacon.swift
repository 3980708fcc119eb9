import BLECore
import BLEWire

/// Xiaomi MiBeacon (service data of UUID 0xFE95), versions 2 to 5: frame control (LE16), product
/// id (LE16), frame counter, then the MAC reversed, a capability byte and the objects (type LE16,
/// length, data) as the frame control says. Versions 4 and 5 encrypt the objects with
/// AES-128-CCM: nonce = MAC reversed ‖ product id ‖ frame counter ‖ 3-byte extended counter,
/// associated data 0x11, then the extended counter and a 4-byte MIC.
///
///     let reading = try MiBeacon.decode(ad, keys: SensorKeys([address: bindkey]))
public enum MiBeacon: SensorFormat {
    static let uuid: UInt16 = 0xFE95
    static let name = "Xiaomi"

    /// Product ids of common sensors (model names as Xiaomi prints them on the box).
    static let models: [UInt16: String] = [
        0x0098: "HHCCJCY01", 0x015D: "HHCCPOT002", 0x01AA: "LYWSDCGQ", 0x02DF: "JQJCY01YM", 0x0347: "CGG1", 0x0387: "MHO-C401",
        0x03DD: "MUE4094RT", 0x045B: "LYWSD02", 0x055B: "LYWSD03MMC", 0x0576: "CGD1", 0x066F: "CGDK2",
        0x0863: "SJWS01LM", 0x098B: "MCCGQ02HL", 0x0A83: "CGPR1", 0x0A8D: "RTCGQ02LM", 0x0B48: "CGG1-ENCRYPTED",
        0x1203: "XMWSDJ04MMC", 0x16E4: "LYWSD02MMC", 0x2AEB: "HS1BB(MI)",
    ]

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let d = ad.serviceData(uuid16: uuid) else { return nil }
        guard d.count >= 5 else { throw SensorDecodeError(format: name, reason: "\(d.count) bytes, the header needs 5") }
        let control = UInt16(d[0]) | UInt16(d[1]) << 8
        let version = Int(control >> 12)
        guard control & 0x0080 == 0 else { throw SensorDecodeError(format: name, reason: "mesh frames are not decoded") }
        guard version >= 2 else { throw SensorDecodeError(format: name, reason: "version \(version), only 2 to 5 are decoded") }
        let product = UInt16(d[2]) | UInt16(d[3]) << 8
        var reading = SensorReading(format: name, brand: "Xiaomi", model: models[product] ?? "0x" + String(product, radix: 16, uppercase: true))
        var i = 5
        var mac = ad.address.address
        if control & 0x0010 != 0 {
            guard d.count >= i + 6 else { throw SensorDecodeError(format: name, reason: "MAC flag set but only \(d.count - i) bytes follow") }
            mac = SensorBytes.address(reversed: d[i..<i + 6])
            i += 6
        }
        if control & 0x0020 != 0 {
            guard d.count > i else { throw SensorDecodeError(format: name, reason: "capability flag set but the payload ends at byte \(i)") }
            let capability = d[i]
            i += capability & 0x20 != 0 ? 2 : 1
            guard d.count >= i else { throw SensorDecodeError(format: name, reason: "I/O capability flag set but the payload ends at byte \(d.count)") }
        }
        reading.packetID = UInt64(d[4])
        guard control & 0x0040 != 0 else { return reading }
        guard control & 0x0008 != 0 else {
            reading.values = objects(d[i...])
            return reading
        }
        reading.encrypted = true
        guard version >= 4 else {
            reading.refusal = "encrypted with MiBeacon v\(version) (not authenticated), only v4 and v5 encryption is decoded"
            return reading
        }
        guard d.count >= i + 1 + 7 else {
            throw SensorDecodeError(format: name, reason: "encrypted payload of \(d.count - i) bytes, needs at least 8 (data, counter, MIC)")
        }
        let counterAt = d.count - 7
        reading.packetID = UInt64(d[4]) | SensorBytes.unsignedLE(d, counterAt, 3) << 8
        let key: [UInt8]
        switch keys.lookup(mac, advertiser: ad.address.address, noun: "bindkey") {
        case .key(let k): key = k
        case .refused(let why):
            reading.refusal = why
            return reading
        }
        let nonce = mac.littleEndianBytes + d[2..<5] + d[counterAt..<counterAt + 3]
        guard let plain = AESCCM.decrypt(key: key, nonce: nonce, aad: [0x11], ciphertext: d[i..<counterAt], tag: d[(counterAt + 3)...]) else {
            reading.refusal = "encrypted; decryption failed for \(mac) (wrong bindkey?)"
            return reading
        }
        reading.values = objects(plain[...])
        return reading
    }

    /// The objects in order; an object running past the end ends parsing, one of a known type
    /// but the wrong length is skipped.
    static func objects(_ p: ArraySlice<UInt8>) -> [(key: String, value: JSONValue)] {
        var values = SensorValues()
        var i = p.startIndex
        while p.endIndex - i >= 3 {
            let type = UInt16(p[i]) | UInt16(p[i + 1]) << 8
            let length = Int(p[i + 2])
            guard p.endIndex - (i + 3) >= length else { break }
            object(type, p[(i + 3)..<(i + 3 + length)], into: &values)
            i += 3 + length
        }
        return values.pairs
    }

    /// One object (Xiaomi's "object definition" table).
    static func object(_ type: UInt16, _ o: ArraySlice<UInt8>, into v: inout SensorValues) {
        let n = o.count
        func u(_ at: Int, _ size: Int) -> Int64 { Int64(SensorBytes.unsignedLE(o, at, size)) }
        func s(_ at: Int, _ size: Int) -> Int64 { SensorBytes.signedLE(o, at, size) }
        func float(_ at: Int, decimals: Double) -> JSONValue {
            let f = Double(Float(bitPattern: UInt32(SensorBytes.unsignedLE(o, at, 4))))
            return f.isFinite ? .double((f * decimals).rounded() / decimals) : .null
        }
        switch (type, n) {
        case (0x0003, _): v.append("motion", .bool(true))
        case (0x000F, 3):
            v.append("motion", .bool(true))
            v.append("illuminance", .int(Int(u(0, 3))))
        case (0x1004, 2): v.append("temperature", SensorBytes.scaled(s(0, 2), divisor: 10))
        // Humidity is 0.1 % as the object definition says; xiaomi-ble drops the decimal for
        // LYWSD03MMC and MHO-C401, this decoder does not.
        case (0x1006, 2): v.append("humidity", SensorBytes.scaled(u(0, 2), divisor: 10))
        case (0x1007, 3): v.append("illuminance", .int(Int(u(0, 3))))
        case (0x1008, 1): v.append("moisture", .int(Int(u(0, 1))))
        case (0x1009, 2): v.append("conductivity", .int(Int(u(0, 2))))
        case (0x1010, 2): v.append("formaldehyde", SensorBytes.scaled(u(0, 2), divisor: 100))
        case (0x100A, 1...): v.append("battery", .int(Int(u(0, 1))))
        case (0x100D, 4):
            v.append("temperature", SensorBytes.scaled(s(0, 2), divisor: 10))
            v.append("humidity", SensorBytes.scaled(u(2, 2), divisor: 10))
        case (0x1012, 1...): v.append("power_on", .bool(u(0, 1) != 0))
        case (0x1014, 1...): v.append("leak", .bool(u(0, 1) != 0))
        case (0x1015, 1...): v.append("smoke", .bool(u(0, 1) != 0))
        // Seconds without motion: 30 s or less counts as motion, as the Mi Home app shows it.
        case (0x1017, 4): v.append("motion", .bool(u(0, 4) <= 30))
        case (0x1018, 1...): v.append("light", .bool(u(0, 1) != 0))
        case (0x1019, 1...):
            switch u(0, 1) {
            case 0, 2: v.append("opening", .bool(true))
            case 1: v.append("opening", .bool(false))
            default: break
            }
        case (0x4801, 4): v.append("temperature", float(0, decimals: 10))
        case (0x4802, 1), (0x4C02, 1): v.append("humidity", .int(Int(u(0, 1))))
        case (0x4803, 1), (0x4C03, 1): v.append("battery", .int(Int(u(0, 1))))
        case (0x4818, 2): v.append("motion", .bool(u(0, 2) <= 30))
        case (0x4A08, 4):
            v.append("motion", .bool(true))
            v.append("illuminance", float(0, decimals: 1))
        case (0x4C01, 4): v.append("temperature", float(0, decimals: 100))
        case (0x4C08, 4): v.append("humidity", float(0, decimals: 100))
        default: break
        }
    }
}
