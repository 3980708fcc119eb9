import CCrypto

/// The sensor scene's reports: 1,000 advertisers as sensors people own, each sending a new
/// reading once a second and repeating it ten times (10,000 reports/s): a third encrypted
/// BTHome v2 (AES-128-CCM, the counter increasing with each reading; the key of each in the
/// gateway's `"keys"`), a third plain BTHome v2 (packet id 0x00), a third pvvx thermometers
/// (service data 0x181A). Each carries temperature, humidity and battery; ADV_NONCONN_IND from
/// a random static address. The payloads of every second of the run are made before it starts.
struct GatewaySensorReports: AdvertisingReportSource {
    static let advertisers = GatewayWorkload.advertisers

    /// Advertiser `i`'s address: C3:00:00:00:hi:lo.
    static func address(_ i: Int) -> UInt64 { 0xC3_00_00_00_00_00 | UInt64(i) }

    static func isEncrypted(_ i: Int) -> Bool { i % 3 == 0 }

    /// Advertiser `i`'s bindkey (16 bytes).
    static func key(_ i: Int) -> [UInt8] { (0..<16).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0 &* 7 &+ 1) } }

    /// `"keys"` for the gateway's config: the encrypting advertisers' keys by address.
    static var configKeys: String {
        let pairs = (0..<advertisers).filter(isEncrypted).map { i in
            "\"\(addressText(i))\": \"\(key(i).map { hex2($0) }.joined())\""
        }
        return "{" + pairs.joined(separator: ", ") + "}"
    }

    static func addressText(_ i: Int) -> String {
        let a = address(i)
        return (0..<6).reversed().map { hex2(UInt8(truncatingIfNeeded: a >> (8 * UInt64($0)))) }.joined(separator: ":")
    }

    static func hex2(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
    }

    /// The AD structures of advertiser `i` for every second `0..<seconds`.
    private let payloads: [[UInt8]]
    private let seconds: Int

    init(seconds: Int) throws {
        self.seconds = seconds
        var all: [[UInt8]] = []
        all.reserveCapacity(seconds * Self.advertisers)
        for second in 0..<seconds {
            for i in 0..<Self.advertisers { all.append(try Self.payload(i, second: second)) }
        }
        payloads = all
    }

    /// Flags, then the service data of advertiser `i`'s format for `second`.
    static func payload(_ i: Int, second: Int) throws -> [UInt8] {
        let centi = 2000 + (i % 50) * 10 + second % 100          // temperature in 0.01 °C
        let humidity = 4000 + (i % 40) * 25 + second % 10        // in 0.01 %
        let battery = UInt8(50 + i % 50)
        let le16 = { (v: Int) -> [UInt8] in [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        // BTHome objects: battery (0x01, %), temperature (0x02, 0.01 °C), humidity (0x03, 0.01 %).
        let objects: [UInt8] = [0x01, battery, 0x02] + le16(centi) + [0x03] + le16(humidity)
        let service: [UInt8]
        switch i % 3 {
        case 0:
            let counter = UInt32(second + 1)
            let counterBytes = (0..<4).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt32($0))) }
            let a = address(i)
            let mac = (0..<6).reversed().map { UInt8(truncatingIfNeeded: a >> (8 * UInt64($0))) }
            // BTHome's nonce: the MAC (most significant byte first), the UUID, the device
            // information byte (v2, encrypted: 0x41) and the counter.
            let nonce = mac + [0xD2, 0xFC, 0x41] + counterBytes
            var ciphertext = [UInt8](repeating: 0, count: objects.count)
            var tag = [UInt8](repeating: 0, count: 4)
            let k = key(i)
            let ok = ciphertext.withUnsafeMutableBufferPointer { out in
                tag.withUnsafeMutableBufferPointer { t in
                    ccrypto_aes128_ccm_encrypt(k, nonce, nonce.count, nil, 0, objects, objects.count, out.baseAddress, t.baseAddress, 4)
                }
            }
            guard ok == 1 else { throw BenchError("AES-CCM encryption failed for advertiser \(i)") }
            service = [0xD2, 0xFC, 0x41] + ciphertext + counterBytes + tag
        case 1:
            service = [0xD2, 0xFC, 0x40, 0x00, UInt8(truncatingIfNeeded: second)] + objects
        default:
            // pvvx: the MAC least significant byte first, temperature, humidity, battery mV,
            // battery %, counter, flags.
            let a = address(i)
            let mac = (0..<6).map { UInt8(truncatingIfNeeded: a >> (8 * UInt64($0))) }
            service = [0x1A, 0x18] + mac + le16(centi) + le16(humidity) + le16(2900 + i % 200) + [battery, UInt8(truncatingIfNeeded: second), 0x00]
        }
        return [0x02, 0x01, 0x06, UInt8(service.count + 1), 0x16] + service
    }

    /// Report `n`: advertiser n % 1000 with the reading of second n / 10,000.
    func append(report n: Int, elapsed: UInt64, to buffer: inout [UInt8]) {
        let i = n % Self.advertisers
        let second = min(n / (Self.advertisers * 10), seconds - 1)
        buffer.appendLegacyReport(eventType: 0x03, address: Self.address(i), data: payloads[second * Self.advertisers + i], rssi: Int8(-40 - n % 30))
    }
}
