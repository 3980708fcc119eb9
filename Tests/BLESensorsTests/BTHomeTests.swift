import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// BTHome v2 objects. Payloads and values from bthome-ble's tests/test_parser_v2.py (service data
/// of 0xFCD2, the first byte the device information); values converted to the units of SensorKinds
/// where bthome-ble keeps another one (mm, mL, lb).
@Suite struct BTHomeTests {
    static func decode(_ hex: String, address: String = "A4:C1:38:8D:18:B2") throws -> SensorReading? {
        try BTHome.decode(Fixture.serviceData(0xFCD2, hex, address: address), keys: SensorKeys())
    }

    @Test(arguments: [
        ("40 00 09 01 5d 02 5d 09 03 b7 18", #"{"battery":93,"temperature":23.97,"humidity":63.27}"#),
        ("40 04 13 8a 01", #"{"pressure":1008.83}"#),
        ("40 05 13 8a 14", #"{"illuminance":13460.67}"#),
        ("40 06 5e 1f", #"{"weight":80.3}"#),
        // 74.86 lb × 0.45359237 kg/lb.
        ("40 07 3e 1d", #"{"weight":33.9559248182}"#),
        ("40 08 ca 06", #"{"dew_point":17.38}"#),
        ("40 09 60", #"{"count":96}"#),
        ("40 0a 13 8a 14", #"{"energy":1346.067}"#),
        ("40 0b 02 1b 00", #"{"power":69.14}"#),
        ("40 0c 02 0c", #"{"voltage":3.074}"#),
        ("40 0d 12 0c 0e 02 1c", #"{"pm25":3090,"pm10":7170}"#),
        ("40 0f 01", #"{"generic":true}"#),
        ("40 10 01", #"{"power_on":true}"#),
        ("40 11 00", #"{"opening":false}"#),
        ("40 12 e2 04", #"{"co2":1250}"#),
        ("40 13 33 01", #"{"tvoc":307}"#),
        ("40 14 02 0c", #"{"moisture":30.74}"#),
        ("40 2d 01", #"{"window":true}"#),
        ("40 3f 02 0c", #"{"rotation":307.4}"#),
        // 12 mm.
        ("40 40 0c 00", #"{"distance":0.012}"#),
        ("40 41 4e 00", #"{"distance":7.8}"#),
        ("40 42 4e 34 00", #"{"duration":13.39}"#),
        ("40 43 4e 34", #"{"current":13.39}"#),
        ("40 44 4e 34", #"{"speed":133.9}"#),
        ("40 45 11 01", #"{"temperature":27.3}"#),
        ("40 46 32", #"{"uv_index":5}"#),
        ("40 47 87 56", #"{"volume":2215.1}"#),
        // 34780 mL.
        ("40 48 dc 87", #"{"volume":34.78}"#),
        ("40 49 dc 87", #"{"volume_flow_rate":34.78}"#),
        ("40 4a 02 0c", #"{"voltage":307.4}"#),
        ("40 4b 13 8a 14", #"{"gas":1346.067}"#),
        ("40 4c 41 01 8a 01", #"{"gas":25821.505}"#),
        ("40 4d 12 13 8a 14", #"{"energy":344593.17}"#),
        ("40 4e 87 56 2a 01", #"{"volume":19551.879}"#),
        ("40 4f 87 56 2a 01", #"{"water":19551.879}"#),
        ("44 50 5d 39 61 64", #"{"timestamp":"2023-05-14T19:41:17Z"}"#),
        ("44 51 87 56", #"{"acceleration":22.151}"#),
        ("44 52 87 56", #"{"gyroscope":22.151}"#),
        ("44 53 0c 48 65 6c 6c 6f 20 57 6f 72 6c 64 21", #"{"text":"Hello World!"}"#),
        ("44 54 0c 48 65 6c 6c 6f 20 57 6f 72 6c 64 21", #"{"raw":"48656C6C6F20576F726C6421"}"#),
        ("40 55 87 56 2a 01", #"{"volume_storage":19551.879}"#),
        ("40 56 e8 03", #"{"conductivity":1000}"#),
        ("40 57 ea", #"{"temperature":-22}"#),
        ("40 58 ea", #"{"temperature":-7.7}"#),
        ("40 59 ea", #"{"count":-22}"#),
        ("40 5a ea ea", #"{"count":-5398}"#),
        ("40 5b ea 02 34 ea", #"{"count":-365690134}"#),
        ("40 5c 02 fb ff ff", #"{"power":-12.78}"#),
        ("40 5d 02 ea", #"{"current":-5.63}"#),
        ("40 5e 3f 75 5f 11 d5", #"{"direction":300.15,"precipitation":5454.5}"#),
        ("40 60 01", #"{"channel":1}"#),
        ("40 61 ac 0d", #"{"rotational_speed":3500}"#),
        ("40 62 40 99 df ff", #"{"speed":-2.123456}"#),
        ("40 63 00 57 d0 ff", #"{"acceleration":-3.123456}"#),
        ("40 64 02", #"{"light_level":2}"#),
        // bthome.io/format's example of 0x65, settings revision.
        ("40 65 03", #"{"settings_revision":3}"#),
    ])
    func objectsDecodeToHomeAssistantUnits(_ hex: String, _ expected: String) throws {
        #expect(Fixture.text(try Self.decode(hex)) == expected, "\(hex)")
    }

    @Test func commandsAreEvents() throws {
        // bthome.io/format, "Commands": 3B0000 off, 3B0001 on, 3B0002 toggle, 3B010305 step up
        // 5 steps, 3B010405 step down 5 steps (a length byte whose low 5 bits count the
        // arguments, the opcode, the arguments; the steps are not published).
        for (hex, event) in [("3b 00 00", "off"), ("3b 00 01", "on"), ("3b 00 02", "toggle"), ("3b 01 03 05", "step_up"), ("3b 01 04 05", "step_down")] {
            #expect(Fixture.text(try Self.decode("40 " + hex)) == #"{"command":"\#(event)"}"#, "\(hex)")
        }
        // Two commands are numbered; an unknown opcode keeps its place without a value.
        #expect(Fixture.text(try Self.decode("40 3b 00 01 3b 01 03 05")) == #"{"command_1":"on","command_2":"step_up"}"#)
        #expect(Fixture.text(try Self.decode("40 3b 00 09 3b 00 02")) == #"{"command_2":"toggle"}"#)
        // Arguments running past the end end parsing, keeping what came before.
        #expect(Fixture.text(try Self.decode("40 01 5d 3b 05 03 05")) == #"{"battery":93}"#)
        #expect(Fixture.text(try Self.decode("40 01 5d 3b")) == #"{"battery":93}"#)
    }

    @Test func brandAndModelComeFromTheLocalName() throws {
        func named(_ hex: String, _ name: String) throws -> SensorReading? {
            let data = AdvertisingData([.serviceData16(uuid: 0xFCD2, data: [UInt8](hex: hex)!), .completeLocalName(name)])
            return try BTHome.decode(SensorAdvertisement(address: LEAddress(BluetoothAddress("A4:C1:38:8D:18:B2")!, type: .public), data: data),
                                     keys: SensorKeys())
        }
        // test_bthome_binary_sensor_window: "SBDW-002C" is Shelly's BLU Door/Window.
        let window = try #require(try named("40 2d 01", "SBDW-002C"))
        #expect(window.brand == "Shelly" && window.model == "BLU Door/Window" && Fixture.text(window) == #"{"window":true}"#)
        // test_bthome_moisture: "prst" is a b-parasite plant sensor.
        let plant = try #require(try named("40 14 02 0c", "prst"))
        #expect(plant.brand == "b-parasite" && plant.model == "Plant sensor" && Fixture.text(plant) == #"{"moisture":30.74}"#)
        // Any other name names no maker.
        let other = try #require(try named("40 14 02 0c", "TEST DEVICE"))
        #expect(other.brand == nil && other.model == nil)
    }

    @Test func eventsAreStringsNumberedWithTheirPlaceKept() throws {
        #expect(Fixture.text(try Self.decode("40 3a 04")) == #"{"button":"long_press"}"#)
        #expect(Fixture.text(try Self.decode("40 3a 80")) == #"{"button":"hold_press"}"#)
        // Three buttons, the first with event "none": bthome-ble numbers it and fires 2 and 3.
        #expect(Fixture.text(try Self.decode("40 3a 00 3a 01 3a 03")) == #"{"button_2":"press","button_3":"triple_press"}"#)
        #expect(Fixture.text(try Self.decode("40 3c 01 03")) == #"{"dimmer":"rotate_left"}"#)
        #expect(Fixture.text(try Self.decode("40 3a fe")) == "{}")
    }

    @Test func repeatedObjectsAreNumberedAndTheOrderIsFree() throws {
        #expect(Fixture.text(try Self.decode("40 02 ca 09 02 cf 09")) == #"{"temperature_1":25.06,"temperature_2":25.11}"#)
        let r = try Self.decode("40 00 01 0b 00 00 00 4a 0d 09 01 33 0c e9 0c")
        #expect(Fixture.text(r) == #"{"power":0,"voltage_1":231.7,"battery":51,"voltage_2":3.305}"#)
        #expect(r?.packetID == 1)
        // Ids out of numerical order are accepted.
        #expect(Fixture.text(try Self.decode("40 03 bf 13 02 ca 09")) == #"{"humidity":50.55,"temperature":25.06}"#)
    }

    @Test func packetIDAndDeviceInformation() throws {
        let r = try #require(try Self.decode("40 00 09"))
        #expect(r.packetID == 9 && r.values.isEmpty && !r.encrypted && !r.triggerBased)
        #expect(try Self.decode("44 04 13 8a 01")?.triggerBased == true)
        // bthome.io "Device information": device type uint16 0x0001; firmware versions of 4 and 3 bytes,
        // the least significant part (the last number) first.
        #expect(Fixture.text(try Self.decode("40 f0 01 00 f1 00 01 02 04 f2 03 02 01")) ==
                #"{"device_type":1,"firmware_version_1":"4.2.1.0","firmware_version_2":"1.2.3"}"#)
    }

    @Test func macIncludedIsSkipped() throws {
        #expect(Fixture.text(try Self.decode("42 b2 18 8d 38 c1 a4 04 13 8a 01")) == #"{"pressure":1008.83}"#)
    }

    @Test func anUnknownIDOrATruncatedObjectEndsParsingKeepingWhatCameBefore() throws {
        #expect(Fixture.text(try Self.decode("40 01 5d fe 5d 09 03 b7 18")) == #"{"battery":93}"#)
        #expect(Fixture.text(try Self.decode("40 fe ca 09")) == "{}")
        #expect(Fixture.text(try Self.decode("40 02 ca 09 03 bf")) == #"{"temperature":25.06}"#)
        // A text whose length runs past the end, and one that is not UTF-8.
        #expect(Fixture.text(try Self.decode("44 01 5d 53 ff 41")) == #"{"battery":93}"#)
        #expect(Fixture.text(try Self.decode("44 53 01 87")) == "{}")
        #expect(Fixture.text(try Self.decode("44 53")) == "{}")
    }

    @Test func wrongVersionsAndEmptyDataAreErrors() {
        #expect(throws: SensorDecodeError.self) { try Self.decode("e1 02 00 0c 04 04 13 8a 01") }
        #expect(throws: SensorDecodeError.self) { try Self.decode("00") }
        #expect(throws: SensorDecodeError.self) { try Self.decode("") }
        #expect(throws: SensorDecodeError.self) { try Self.decode("42 b2 18 8d") }
    }

    @Test func otherServiceDataIsNotBTHome() throws {
        #expect(try BTHome.decode(Fixture.serviceData(0x181A, "40 04 13 8a 01"), keys: SensorKeys()) == nil)
    }
}
