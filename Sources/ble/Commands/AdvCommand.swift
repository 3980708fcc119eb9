import BLECore
import BLEGateway
import BLESensors
import BLEWire

/// `ble adv HEX`: decodes one advertisement (the hex of its AD structures) as the gateway would
/// publish it for that device.
enum AdvCommand {
    static let spec = CommandSpec(
        name: "adv",
        summary: "decode one advertisement's AD structures as the gateway publishes them (BTHome, Xiaomi, iBeacon, ...)",
        usage: ["adv [--address ADDR[/public|/random]] [--key HEX] [--scan-response HEX] [--json] HEX"],
        options: [
            .value("address", nil, "ADDR", "the advertiser's address (random unless suffixed /public); encrypted formats need it"),
            .value("key", nil, "HEX", "the device's 16-byte bindkey (BTHome, MiBeacon v4/v5), as 32 hex digits"),
            .value("scan-response", nil, "HEX", "the AD structures of the scan response"),
        ],
        details: ["HEX is the advertising data as sent on the air: length, AD type, data, repeated (spaces and colons allowed). The output is the device's message of 'ble gateway' (with --json the same JSON object, without the RSSI and the connectable flag, which an advertisement's bytes do not carry); without --json one value per line, with its unit. A payload that cannot be decrypted (no key, wrong key) is shown as encrypted with the reason, and still exits 0; malformed AD structures exit 1."],
        examples: [
            ("ble adv 020106 0a16d2fc4002ca0903bf13", "a BTHome v2 temperature and humidity"),
            ("ble adv --address 54:48:E6:8F:80:A5/public --key 231d39c1d7cc1ab1aee224cd096db932 1216d2fc41a47266c95f730011223378237214 --json",
             "an encrypted BTHome payload"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let hex = try ctx.positionals(["HEX"])[0]
        let data = try structures(hex, what: "HEX")
        let scanResponse = try ctx.args.value("scan-response").map { try structures($0, what: "--scan-response") } ?? AdvertisingData()
        var address = LEAddress(.zero, type: .random)
        if let text = ctx.args.value("address") {
            guard case .address(let a) = try DeviceResolver.parse(text) else {
                throw UsageError("--address \"\(text)\" is not an address like A4:C1:38:00:00:01[/public]")
            }
            address = a
        }
        var keys = SensorKeys()
        if let keyText = ctx.args.value("key") {
            guard let key = [UInt8](hex: keyText), key.count == 16 else { throw UsageError("--key must be 16 bytes written as 32 hex digits") }
            keys = SensorKeys([address.address: key])
        }
        var decoder = SensorDecoder(keys: keys)
        let decoding = decoder.decode(SensorAdvertisement(address: address, data: data, scanResponse: scanResponse))
        var merged = data
        merged.structures += scanResponse.structures
        let message = AdvertisementPayload.present(address: address, data: merged, rssi: nil, txPower: nil, connectable: nil, decoding: decoding)
        if ctx.globals.json {
            ctx.console.out(message.text)
        } else {
            for line in lines(address: address, data: merged, decoding: decoding) { ctx.console.out(line) }
        }
    }

    /// The AD structures of `hex`; malformed hex is a usage error, malformed structures a failure.
    static func structures(_ hex: String, what: String) throws -> AdvertisingData {
        guard let bytes = [UInt8](hex: hex) else { throw UsageError("\(what) \"\(hex)\" is not hex") }
        let data = AdvertisingData(bytes: bytes)
        for s in data.structures {
            if case .malformed(let type, _, let reason) = s {
                throw CLIFailure("\(what) does not parse as AD structures: type 0x\(String(type, radix: 16, uppercase: true)): \(reason)")
            }
        }
        return data
    }

    /// "temperature   25.06 °C" lines, after the address, name, brand and model.
    static func lines(address: LEAddress, data: AdvertisingData, decoding: SensorDecoding) -> [String] {
        var rows: [(String, String)] = [("address", "\(address.address) (\(address.type))")]
        if let name = data.localName { rows.append(("name", name)) }
        if let brand = decoding.brand { rows.append(("brand", brand)) }
        if let model = decoding.model { rows.append(("model", model)) }
        let formats = decoding.readings.map(\.format)
        rows.append(("formats", formats.isEmpty ? "none recognised" : formats.joined(separator: ", ")))
        for (key, value) in decoding.values {
            let unit = SensorKinds.kind(for: key)?.unit.map { " \($0)" } ?? ""
            rows.append((key, value.text + unit))
        }
        for (key, value) in decoding.object where key == "encrypted" || key == "reason" {
            if case .string(let s) = value { rows.append((key, s)) } else { rows.append((key, value.text)) }
        }
        let width = (rows.map(\.0.count).max() ?? 0) + 2
        return rows.map { $0.0 + String(repeating: " ", count: width - $0.0.count) + $0.1 }
    }
}
