import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// MiBeacon (0xFE95) and the custom thermometer firmwares (0x181A). MiBeacon payloads, bindkeys
/// and values from xiaomi-ble's tests/test_parser.py; ATC1441 and pvvx payloads and values from
/// ble_monitor's test/test_atc_parser.py (the service data inside its HCI reports).
@Suite struct XiaomiTests {
    static func mi(_ hex: String, _ address: String, key: String? = nil) throws -> SensorReading? {
        try MiBeacon.decode(Fixture.serviceData(0xFE95, hex, address: address), keys: key.map { Fixture.keys(address, $0) } ?? SensorKeys())
    }

    @Test func plainMiBeacon() throws {
        // test_Xiaomi_LYWSD03MMC: object 0x100D, 27.2 °C and 49.0 %.
        let r = try #require(try Self.mi("50 30 5b 05 03 4c 94 b4 38 c1 a4 0d 10 04 10 01 ea 01", "A4:C1:38:B4:94:4C"))
        #expect(Fixture.text(r) == #"{"temperature":27.2,"humidity":49}"#)
        #expect(r.brand == "Xiaomi" && r.model == "LYWSD03MMC" && r.packetID == 3 && !r.encrypted)
        // test_Xiaomi_HHCCJCY01: object 0x1004, 19.6 °C.
        #expect(Fixture.text(try Self.mi("71 20 98 00 12 f3 4f 6b 8d 7c c4 0d 04 10 02 c4 00", "C4:7C:8D:6B:4F:F3")) == #"{"temperature":19.6}"#)
        // test_Xiaomi_LYWSDCGQ: object 0x100D, 18.0 °C and 66.1 %.
        #expect(Fixture.text(try Self.mi("50 20 aa 01 a3 bf 2e 3b 34 2d 58 0d 10 04 b4 00 95 02", "58:2D:34:3B:2E:BF")) ==
                #"{"temperature":18,"humidity":66.1}"#)
        // test_Xiaomi_CGPR1: 0x000F motion with 100 lx.
        #expect(Fixture.text(try Self.mi("50 40 83 0a 01 83 00 0a 38 c1 a4 0f 00 03 64 00 00", "A4:C1:38:0A:00:83")) ==
                #"{"motion":true,"illuminance":100}"#)
    }

    @Test func encryptedV5WithBindkeys() throws {
        // test_Xiaomi_CGG1: humidity 59.6 %.
        let cgg1 = try #require(try Self.mi("58 58 48 0b 68 5f 12 34 2d 58 5a 0b 18 41 e2 aa 00 0e 00 a4 96 4f b5", "5A:58:2D:34:12:5F",
                                            key: "814aac74c4f17b6c1581e1ab87816b99"))
        #expect(Fixture.text(cgg1) == #"{"humidity":59.6}"#)
        #expect(cgg1.encrypted && cgg1.refusal == nil && cgg1.model == "CGG1-ENCRYPTED")
        // test_Xiaomi_XMWSDJ04MMC: no MAC in the frame, humidity 45.0 %.
        #expect(Fixture.text(try Self.mi("48 59 03 12 a4 1b 77 6e 7c 96 ad d7 00 00 00 f2 bf 54 5b", "2C:11:65:25:70:04",
                                         key: "b2cf9a553d53571b5657defd582d676e")) == #"{"humidity":45}"#)
        // test_Xiaomi_MCCGQ02HL: door left open (0x1019 = 2), which is open.
        #expect(Fixture.text(try Self.mi("58 58 8b 09 a3 ae 21 81 ec aa e4 0e 2c 55 3c 04 00 00 d2 8a 50 0c", "E4:AA:EC:81:21:AE",
                                         key: "017e52d2684779298709b117c0a75a7b")) == #"{"opening":true}"#)
    }

    @Test func lywsd03mmcHumidityKeepsItsDecimalAsTheObjectDefinitionSays() throws {
        // test_Xiaomi_LYWSD03MMC_encrypted: xiaomi-ble reports 46 (it truncates this model's
        // humidity); the object is uint16 in 0.1 %, so the decimal stays.
        let r = try #require(try Self.mi("58 58 5b 05 50 f4 83 02 38 c1 a4 95 ef 58 76 3c 26 00 00 97 e2 ab b5", "A4:C1:38:02:83:F4",
                                         key: "e9ea895fac7cca6d30532432a516f3a8"))
        let humidity = try #require(r["humidity"])
        guard case .double(let h) = humidity else { Issue.record("humidity \(humidity)"); return }
        #expect(h >= 46 && h < 47 && h != 46)
    }

    @Test func encryptedWithoutOrWithAWrongKeyIsRefused() throws {
        let hex = "58 58 48 0b 68 5f 12 34 2d 58 5a 0b 18 41 e2 aa 00 0e 00 a4 96 4f b5"
        let none = try #require(try Self.mi(hex, "5A:58:2D:34:12:5F"))
        #expect(none.encrypted && none.values.isEmpty && none.refusal?.hasPrefix("encrypted; no key for 5A:58:2D:34:12:5F") == true)
        let wrong = try #require(try Self.mi(hex, "5A:58:2D:34:12:5F", key: "e9ea895fac7cca6d30532432a516f3a8"))
        #expect(wrong.values.isEmpty && wrong.refusal == "encrypted; decryption failed for 5A:58:2D:34:12:5F (wrong bindkey?)")
    }

    @Test func hostileMiBeaconFrames() throws {
        // Shorter than the header, mesh, version 1, a MAC flag without the MAC, a capability flag at the end.
        for hex in ["50 30 5b", "d0 30 5b 05 03", "50 10 5b 05 03", "50 30 5b 05 03 4c 94", "60 30 5b 05 03", "58 58 48 0b 68 5f 12 34 2d 58 5a 0b 18"] {
            #expect(throws: SensorDecodeError.self, "\(hex)") { try Self.mi(hex, "A4:C1:38:B4:94:4C") }
        }
        // An object whose length runs past the end ends parsing; one of the wrong length is skipped.
        #expect(Fixture.text(try Self.mi("50 30 5b 05 03 4c 94 b4 38 c1 a4 0d 10 09 10 01 ea 01", "A4:C1:38:B4:94:4C")) == "{}")
        #expect(Fixture.text(try Self.mi("50 30 5b 05 03 4c 94 b4 38 c1 a4 04 10 01 10 0a 10 01 64", "A4:C1:38:B4:94:4C")) == #"{"battery":100}"#)
    }

    @Test func plantSensorObjectsSentInTurns() {
        // test_Xiaomi_HHCCJCY01_all_values: illuminance (0x1007), conductivity (0x1009), moisture
        // (0x1008), then temperature (0x1004), one frame each: 0 lx, 599 µS/cm, 64 %, 24.4 °C.
        var d = SensorDecoder()
        var last = SensorDecoding()
        for hex in ["71 20 98 00 66 7a 3e 6a 8d 7c c4 0d 07 10 03 00 00 00", "71 20 98 00 68 7a 3e 6a 8d 7c c4 0d 09 10 02 57 02",
                    "71 20 98 00 47 7a 3e 6a 8d 7c c4 0d 08 10 01 40", "71 20 98 00 69 7a 3e 6a 8d 7c c4 0d 04 10 02 f4 00"] {
            last = d.decode(Fixture.serviceData(0xFE95, hex, address: "C4:7C:8D:6A:3E:7A"))
        }
        #expect(JSONValue.object(last.object).text == #"{"illuminance":0,"conductivity":599,"moisture":64,"temperature":24.4}"#)
        #expect(last.brand == "Xiaomi" && last.model == "HHCCJCY01")
    }

    @Test func formaldehydeMotionAndIlluminance() throws {
        // test_Xiaomi_JQJCY01YM1: object 0x1010, 1.25 mg/m³.
        let hcho = try #require(try Self.mi("50 40 df 02 01 df 02 00 8d 7c c4 10 10 02 7d 00", "C4:7C:8D:00:02:DF"))
        #expect(Fixture.text(hcho) == #"{"formaldehyde":1.25}"#)
        #expect(hcho.model == "JQJCY01YM")
        // test_Xiaomi_MUE4094RT: object 0x0003, motion detected (xiaomi-ble fires it as an event;
        // here it is the motion binary sensor turning on).
        let motion = try #require(try Self.mi("40 30 dd 03 24 03 00 01 01", "DE:70:E8:B2:39:0C"))
        #expect(Fixture.text(motion) == #"{"motion":true}"#)
        #expect(motion.model == "MUE4094RT")
        // test_Xiaomi_HS1BB_MI_obj4a08: encrypted float illuminance 228 lx with motion.
        #expect(Fixture.text(try Self.mi(SensorCounterTests.motion, SensorCounterTests.hs1bb, key: "7475a4a77584401780ffc3ee62dd353c")) ==
                #"{"motion":true,"illuminance":228}"#)
        // test_Xiaomi_HS1BB_MI_obj4818: seconds without motion above 30, so no motion.
        #expect(Fixture.text(try Self.mi(SensorCounterTests.noMotion, SensorCounterTests.hs1bb, key: "7475a4a77584401780ffc3ee62dd353c")) ==
                #"{"motion":false}"#)
    }

    @Test func atc1441AndPvvx() throws {
        // test_atc_atc1441: 16.2 °C, 47 %, 95 %, 3.064 V, frame 25.
        let atc = try #require(try XiaomiCustom.decode(Fixture.serviceData(0x181A, "a4 c1 38 02 83 f4 00 a2 2f 5f 0b f8 19"), keys: SensorKeys()))
        #expect(Fixture.text(atc) == #"{"temperature":16.2,"humidity":47,"battery":95,"voltage":3.064}"#)
        #expect(atc.format == "ATC1441" && atc.packetID == 25)
        // test_atc_custom: 17.05 °C, 44.57 %, 88 %, 2.998 V, frame 247.
        let pvvx = try #require(try XiaomiCustom.decode(Fixture.serviceData(0x181A, "f4 83 02 38 c1 a4 a9 06 69 11 b6 0b 58 f7 0d"), keys: SensorKeys()))
        #expect(Fixture.text(pvvx) == #"{"temperature":17.05,"humidity":44.57,"battery":88,"voltage":2.998}"#)
        #expect(pvvx.format == "pvvx" && pvvx.packetID == 247)
        // Other lengths (pvvx's encrypted formats among them) are not these formats.
        #expect(try XiaomiCustom.decode(Fixture.serviceData(0x181A, "11 d6 03 fb fa 7b 6d fb 1e 26 fd"), keys: SensorKeys()) == nil)
    }
}
