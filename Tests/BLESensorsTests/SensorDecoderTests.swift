import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// The stateful decoder: repeated packet ids, encryption counters that must increase, downgrades,
/// and its bound on devices. Encrypted payloads from bthome-ble's tests/test_parser_v2.py
/// (key 231d39c1d7cc1ab1aee224cd096db932, device 54:48:E6:8F:80:A5).
@Suite struct SensorDecoderTests {
    static let shelly = "54:48:E6:8F:80:A5"
    static let keys = Fixture.keys(shelly, "231d39c1d7cc1ab1aee224cd096db932")
    /// test_increasing_encryption_counter / test_decreasing_encryption_counter: counters 0x00112233,
    /// 0x00112234 and 0x00112232.
    static let counter33 = "41 e4 45 f3 c9 96 2b 33 22 11 00 6c 7c 45 19"
    static let counter34 = "41 3e 93 2c c7 17 5f 34 22 11 00 55 38 76 af"
    static let counter32 = "41 72 3d 30 35 fb 88 32 22 11 00 9e 74 14 c0"

    static func bthome(_ hex: String, _ address: String = shelly) -> SensorAdvertisement { Fixture.serviceData(0xFCD2, hex, address: address) }

    @Test func aRepeatedPacketIDIsARepeat() {
        var d = SensorDecoder()
        // test_identical_packet_id: 9, 9 again, then 8.
        #expect(!d.decode(Self.bthome("40 00 09 02 ca 09", "A4:C1:38:8D:18:B2")).isRepeat)
        let again = d.decode(Self.bthome("40 00 09 02 ca 09", "A4:C1:38:8D:18:B2"))
        #expect(again.isRepeat && JSONValue.object(again.object).text == #"{"temperature":25.06}"#)
        #expect(!d.decode(Self.bthome("40 00 08 02 ca 09", "A4:C1:38:8D:18:B2")).isRepeat)
        // Another device with the same packet id is not a repeat.
        #expect(!d.decode(Self.bthome("40 00 08 02 ca 09", "A4:C1:38:8D:18:B3")).isRepeat)
    }

    @Test func theEncryptionCounterMustIncrease() {
        var d = SensorDecoder(keys: Self.keys)
        let first = d.decode(Self.bthome(Self.counter33))
        #expect(first.readings.first?.refusal == nil && !first.values.isEmpty)
        #expect(d.decode(Self.bthome(Self.counter33)).isRepeat)
        let higher = d.decode(Self.bthome(Self.counter34))
        #expect(!higher.isRepeat && higher.readings.first?.refusal == nil)
        let lower = d.decode(Self.bthome(Self.counter32))
        #expect(lower.values.isEmpty)
        #expect(JSONValue.object(lower.object).text ==
                #"{"encrypted":true,"reason":"encryption counter 1122866 from 54:48:E6:8F:80:A5 is below the last one, 1122868 (replayed?)"}"#)
    }

    @Test func aCounterThatWrapsIsRefused() {
        // test_reset_encryption_counter: 0xFFFFFFFF, then 0. bthome-ble accepts the restart; a
        // counter that does not increase is refused here (a replay cannot be told from a restart).
        var d = SensorDecoder(keys: Self.keys)
        #expect(d.decode(Self.bthome("41 ba 0d b0 7a ee f6 ff ff ff ff 21 fd 46 00")).readings.first?.refusal == nil)
        let wrapped = d.decode(Self.bthome("41 de 40 b5 0e 67 66 00 00 00 00 d7 cb 95 de"))
        #expect(wrapped.values.isEmpty && wrapped.readings.first?.refusal?.hasPrefix("encryption counter 0 ") == true)
    }

    @Test func anUnencryptedPacketFromADeviceThatEncryptsIsADowngrade() {
        // test_encryption_downgrade_fails: a key is configured, the packet is not encrypted.
        var d = SensorDecoder(keys: Self.keys)
        let plain = d.decode(Self.bthome("40 04 13 8a 01"))
        #expect(JSONValue.object(plain.object).text ==
                #"{"reason":"unencrypted BTHome payload from 54:48:E6:8F:80:A5, which encrypts (downgrade refused)"}"#)
        // test_downgrade_detected_flag_v2: once seen encrypted, a device stays known to encrypt
        // even after its key is removed.
        var learned = SensorDecoder(keys: Self.keys)
        _ = learned.decode(Self.bthome(Self.counter33))
        learned.keys = SensorKeys()
        #expect(learned.decode(Self.bthome("40 04 13 8a 01")).values.isEmpty)
        // A device without a key that never encrypted is decoded.
        var open = SensorDecoder()
        #expect(JSONValue.object(open.decode(Self.bthome("40 04 13 8a 01")).object).text == #"{"pressure":1008.83}"#)
    }

    @Test func miBeaconValuesSentInTurnsAreKeptTogether() {
        // A LYWSD03MMC (xiaomi-ble's test_Xiaomi_LYWSD03MMC frame) sends temperature and humidity
        // in one frame (0x100D) and its battery in another (0x100A, 100 %, frame counter 4).
        var d = SensorDecoder()
        _ = d.decode(Fixture.serviceData(0xFE95, "50 30 5b 05 03 4c 94 b4 38 c1 a4 0d 10 04 10 01 ea 01", address: "A4:C1:38:B4:94:4C"))
        let battery = d.decode(Fixture.serviceData(0xFE95, "50 30 5b 05 04 4c 94 b4 38 c1 a4 0a 10 01 64", address: "A4:C1:38:B4:94:4C"))
        #expect(JSONValue.object(battery.object).text == #"{"temperature":27.2,"humidity":49,"battery":100}"#)
    }

    @Test func malformedPayloadsGiveAReason() {
        var d = SensorDecoder()
        #expect(JSONValue.object(d.decode(Self.bthome("00")).object).text ==
                #"{"reason":"BTHome payload not decoded: version 0 in the device information byte 0x0, only 2 is decoded"}"#)
    }

    @Test func theNumberOfDevicesIsBounded() {
        var d = SensorDecoder(capacity: 3)
        for n in 0..<10 {
            _ = d.decode(Fixture.serviceData(0xFCD2, "40 00 01", address: "A4:C1:38:00:00:0\(n)"))
        }
        #expect(d.deviceCount == 3)
        // The newest devices are kept: the last one's packet id is still known.
        #expect(d.decode(Fixture.serviceData(0xFCD2, "40 00 01", address: "A4:C1:38:00:00:09")).isRepeat)
        #expect(!d.decode(Fixture.serviceData(0xFCD2, "40 00 01", address: "A4:C1:38:00:00:00")).isRepeat)
    }

    @Test func keysNeverPrint() {
        let text = "\(Self.keys) \(String(reflecting: Self.keys)) \(Mirror(reflecting: Self.keys).children.map { "\($0.value)" })"
        #expect(!text.lowercased().contains("231d") && !text.lowercased().contains("b932") && text.contains("<redacted>"))
    }
}

/// The one table of value names.
@Suite struct SensorKindsTests {
    @Test func numberedKeysFindTheirBaseName() {
        #expect(SensorKinds.kind(for: "temperature_2")?.deviceClass == "temperature")
        #expect(SensorKinds.kind(for: "temperature_probe_1")?.key == "temperature_probe")
        #expect(SensorKinds.kind(for: "co2")?.deviceClass == "carbon_dioxide" && SensorKinds.kind(for: "co2")?.unit == "ppm")
        #expect(SensorKinds.kind(for: "button_3")?.component == .event)
        #expect(SensorKinds.kind(for: "motion")?.component == .binarySensor)
        #expect(SensorKinds.kind(for: "ibeacon") == nil)
    }

    @Test func everyRequiredNameIsInTheTable() {
        let required = ["temperature", "humidity", "battery", "pressure", "illuminance", "voltage", "current", "power", "energy", "co2",
                        "pm25", "pm10", "moisture", "conductivity", "distance", "tank_level", "formaldehyde", "tvoc", "dew_point", "weight",
                        "speed", "rotation", "uv_index", "volume", "water", "gas", "acceleration_x", "acceleration_y", "acceleration_z",
                        "movement_counter", "reading_quality", "temperature_probe", "signal_strength", "motion", "opening", "door",
                        "window", "leak", "occupancy", "presence", "smoke", "light", "button", "dimmer", "power_on"]
        for key in required { #expect(SensorKinds.kind(for: key) != nil, "\(key)") }
        #expect(Set(SensorKinds.all.map(\.key)).count == SensorKinds.all.count)
    }

    @Test func everyKeyAFormatEmitsIsInTheTable() {
        let bthome = BTHomeObject.table.values.compactMap { object -> String? in
            switch object {
            case .number(let key, _, _, _, _), .binary(let key): return key
            case .button: return "button"
            case .dimmer: return "dimmer"
            case .command: return "command"
            case .text: return "text"
            case .raw: return "raw"
            case .timestamp: return "timestamp"
            case .deviceType: return "device_type"
            case .firmware: return "firmware_version"
            case .packetID: return nil
            }
        }
        for key in bthome { #expect(SensorKinds.kind(for: key) != nil, "\(key)") }
    }
}
