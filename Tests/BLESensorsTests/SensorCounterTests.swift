import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// Encryption counters that wrap or go back, for both formats that encrypt. BTHome payloads from
/// bthome-ble's tests/test_parser_v2.py (key 231d39c1d7cc1ab1aee224cd096db932); MiBeacon frames
/// of one Linptech HS1BB(MI) from xiaomi-ble's tests/test_parser.py (test_Xiaomi_HS1BB_MI_obj4803,
/// _obj4818 and _obj4a08, bindkey 7475a4a77584401780ffc3ee62dd353c), whose counters are the frame
/// counter and the 3-byte extended counter: 0x389E, 0x38C1 and 0x38C2.
@Suite struct SensorCounterTests {
    static let hs1bb = "A4:C1:38:05:8E:E9"
    static let hs1bbKeys = Fixture.keys(hs1bb, "7475a4a77584401780ffc3ee62dd353c")
    /// Battery 100 % (object 0x4803), counter 0x389E.
    static let battery = "58 59 eb 2a 9e e9 8e 05 38 c1 a4 d0 7a d3 e3 38 00 00 33 63 5d 10"
    /// No motion for a while (object 0x4818), counter 0x38C1.
    static let noMotion = "58 59 eb 2a c1 e9 8e 05 38 c1 a4 07 59 53 0f 8d 38 00 00 b7 7a 70 f8"
    /// Motion with 228 lx (object 0x4A08), no MAC in the frame, counter 0x38C2.
    static let motion = "48 59 eb 2a c2 fc e0 2c a0 b4 3a f2 38 00 00 a2 d9 f0 5f"
    /// test_reset_encryption_counter: counter 0xFFFFFFFF, then 0 (BTHome).
    static let bthomeLast = "41 ba 0d b0 7a ee f6 ff ff ff ff 21 fd 46 00"
    static let bthomeZero = "41 de 40 b5 0e 67 66 00 00 00 00 d7 cb 95 de"

    static func mi(_ hex: String) -> SensorAdvertisement { Fixture.serviceData(0xFE95, hex, address: hs1bb) }
    static func bthome(_ hex: String) -> SensorAdvertisement { SensorDecoderTests.bthome(hex) }

    @Test func miBeaconCountersMustIncreaseToo() {
        var d = SensorDecoder(keys: Self.hs1bbKeys)
        let quiet = d.decode(Self.mi(Self.noMotion))
        #expect(JSONValue.object(quiet.object).text == #"{"motion":false,"encrypted":true}"#)
        #expect(quiet.model == "HS1BB(MI)")
        // The battery frame is authentic but older: refused as a replay, its values not kept.
        let older = d.decode(Self.mi(Self.battery))
        #expect(JSONValue.object(older.object).text ==
                #"{"encrypted":true,"reason":"encryption counter 14494 from A4:C1:38:05:8E:E9 is below the last one, 14529 (replayed?)"}"#)
        // The same frame again is a repeat, a newer one is published with what came before.
        #expect(d.decode(Self.mi(Self.noMotion)).isRepeat)
        let newer = d.decode(Self.mi(Self.motion))
        #expect(!newer.isRepeat)
        #expect(JSONValue.object(newer.object).text == #"{"motion":true,"illuminance":228,"encrypted":true}"#)
    }

    @Test func framesInCounterOrderAreAllPublished() {
        var d = SensorDecoder(keys: Self.hs1bbKeys)
        #expect(JSONValue.object(d.decode(Self.mi(Self.battery)).object).text == #"{"battery":100,"encrypted":true}"#)
        #expect(JSONValue.object(d.decode(Self.mi(Self.noMotion)).object).text == #"{"battery":100,"motion":false,"encrypted":true}"#)
    }

    @Test func aCounterRestartIsAcceptedOnlyWhenAsked() {
        // Strict (the default): 0 after 0xFFFFFFFF is refused, as any counter that goes back.
        var strict = SensorDecoder(keys: SensorDecoderTests.keys)
        _ = strict.decode(Self.bthome(Self.bthomeLast))
        #expect(strict.decode(Self.bthome(Self.bthomeZero)).values.isEmpty)
        // With acceptsCounterRestart a counter back below 100 is the device starting again, as
        // bthome-ble takes it; the next one must then increase from there.
        var lenient = SensorDecoder(keys: SensorDecoderTests.keys, acceptsCounterRestart: true)
        _ = lenient.decode(Self.bthome(Self.bthomeLast))
        let restarted = lenient.decode(Self.bthome(Self.bthomeZero))
        #expect(restarted.readings.first?.refusal == nil && !restarted.values.isEmpty)
        #expect(lenient.decode(Self.bthome(Self.bthomeZero)).isRepeat)
        // A counter that goes back but not below 100 stays a replay even then.
        var d = SensorDecoder(keys: SensorDecoderTests.keys, acceptsCounterRestart: true)
        _ = d.decode(Self.bthome(SensorDecoderTests.counter34))
        #expect(d.decode(Self.bthome(SensorDecoderTests.counter32)).readings.first?.refusal?.hasPrefix("encryption counter 1122866 ") == true)
    }
}
