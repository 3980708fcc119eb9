import BLECore
import BLEWire

/// BTHome v2 (bthome.io/format): service data of UUID 0xFCD2, a device-information byte
/// (bit 0 encrypted, bit 1 MAC included, bit 2 trigger based, bits 5–7 version 2), the MAC when
/// included, then objects (id, data). Encrypted payloads are AES-128-CCM with the device's key,
/// the nonce MAC ‖ 0xD2 0xFC ‖ device-information byte ‖ counter, followed by the 4-byte counter
/// and the 4-byte MIC. Brand and model come from the local name (``BTHomeDevices``).
///
///     let reading = try BTHome.decode(ad, keys: SensorKeys([address: key]))
public enum BTHome: SensorFormat {
    static let uuid: UInt16 = 0xFCD2
    static let name = "BTHome"

    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let data = ad.serviceData(uuid16: uuid) else { return nil }
        guard let info = data.first else { throw SensorDecodeError(format: name, reason: "empty service data") }
        let version = info >> 5
        guard version == 2 else {
            throw SensorDecodeError(format: name, reason: "version \(version) in the device information byte 0x\(String(info, radix: 16)), only 2 is decoded")
        }
        let encrypted = info & 0x01 != 0
        let macIncluded = info & 0x02 != 0
        let triggerBased = info & 0x04 != 0
        var start = 1
        var mac = ad.address.address
        if macIncluded {
            guard data.count >= 7 else { throw SensorDecodeError(format: name, reason: "MAC flag set but only \(data.count - 1) bytes follow") }
            mac = SensorBytes.address(reversed: data[1..<7])
            start = 7
        }
        let device = BTHomeDevices.identify(localName: ad.localName)
        var reading = SensorReading(format: name, brand: device?.brand, model: device?.model, encrypted: encrypted)
        reading.triggerBased = triggerBased
        guard encrypted else {
            reading.values = try objects(data[start...], reading: &reading)
            return reading
        }
        guard data.count - start >= 8 + 1 else {
            throw SensorDecodeError(format: name, reason: "encrypted payload of \(data.count - start) bytes, needs at least 9 (data, counter, MIC)")
        }
        let counterAt = data.count - 8
        let counter = UInt32(SensorBytes.unsignedLE(data, counterAt, 4))
        reading.packetID = UInt64(counter)
        let key: [UInt8]
        switch keys.lookup(mac, advertiser: ad.address.address, noun: "key") {
        case .key(let k): key = k
        case .refused(let why):
            reading.refusal = why
            return reading
        }
        let nonce = macBytes(mac) + [0xD2, 0xFC, info] + data[counterAt..<counterAt + 4]
        guard let plain = AESCCM.decrypt(key: key, nonce: nonce, ciphertext: data[start..<counterAt], tag: data[(counterAt + 4)...]) else {
            reading.refusal = "encrypted; decryption failed for \(mac) (wrong key?)"
            return reading
        }
        let packet = reading.packetID
        reading.values = try objects(plain[...], reading: &reading)
        reading.packetID = packet
        return reading
    }

    /// The MAC in display order, most significant byte first.
    static func macBytes(_ a: BluetoothAddress) -> [UInt8] { a.littleEndianBytes.reversed() }

    /// The objects of `payload`: an unknown id or an object running past the end ends parsing,
    /// keeping what came before (as bthome-ble does). Sets `reading.packetID` from object 0x00.
    static func objects(_ payload: ArraySlice<UInt8>, reading: inout SensorReading) throws(SensorDecodeError) -> [(key: String, value: JSONValue)] {
        var values = SensorValues()
        var i = payload.startIndex
        while i < payload.endIndex {
            let id = payload[i]
            guard let object = BTHomeObject.table[id] else { break }
            var dataStart = i + 1
            let size: Int
            if let fixed = object.size {
                size = fixed
            } else {
                guard dataStart < payload.endIndex else { break }
                if case .command = object {
                    size = 2 + Int(payload[dataStart] & 0x1F)   // the length byte, the opcode, the arguments
                } else {
                    size = Int(payload[dataStart])
                    dataStart += 1
                }
            }
            guard payload.endIndex - dataStart >= size else { break }
            let d = payload[dataStart..<dataStart + size]
            i = dataStart + size
            let at = d.startIndex - payload.startIndex
            switch object {
            case .packetID:
                reading.packetID = UInt64(d[d.startIndex])
            case .number(let key, let size, let signed, let multiplier, let divisor):
                let raw = signed ? SensorBytes.signedLE(payload, at, size) : Int64(SensorBytes.unsignedLE(payload, at, size))
                values.append(key, SensorBytes.scaled(raw, multiplier: multiplier, divisor: divisor))
            case .binary(let key):
                values.append(key, .bool(d[d.startIndex] != 0))
            case .button:
                // "none" (and unknown events) keep their place in the numbering but give no value.
                values.append("button", BTHomeObject.buttonEvents[d[d.startIndex]].map(JSONValue.string) ?? .null)
            case .dimmer:
                values.append("dimmer", BTHomeObject.dimmerEvents[d[d.startIndex]].map(JSONValue.string) ?? .null)
            case .command:
                values.append("command", BTHomeObject.commandEvents[d[d.startIndex + 1]].map(JSONValue.string) ?? .null)
            case .text:
                if let s = String(validating: d, as: UTF8.self) { values.append("text", .string(s)) }
            case .raw:
                values.append("raw", .string(Array(d).hexString(separator: "").uppercased()))
            case .timestamp:
                values.append("timestamp", .string(ISO8601.utc(seconds: Int64(SensorBytes.unsignedLE(payload, at, 4)))))
            case .deviceType:
                values.append("device_type", .int(Int(SensorBytes.unsignedLE(payload, at, 2))))
            case .firmware:
                values.append("firmware_version", .string(d.reversed().map { String($0) }.joined(separator: ".")))
            }
        }
        return values.pairs.filter { $0.value != .null }
    }
}

/// Seconds since 1970 as `2023-05-14T19:41:17Z` (proleptic Gregorian calendar, UTC).
enum ISO8601 {
    static func utc(seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
