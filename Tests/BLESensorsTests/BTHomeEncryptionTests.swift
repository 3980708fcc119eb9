import BLECore
@testable import BLESensors
import Testing

/// Encrypted BTHome v2 (AES-128-CCM, 4-byte counter and MIC): payloads, keys and values from
/// bthome-ble's tests/test_parser_v2.py.
@Suite struct BTHomeEncryptionTests {
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    static let shelly = "54:48:E6:8F:80:A5"

    static func decode(_ hex: String, address: String = shelly, key: String? = BTHomeEncryptionTests.key) throws -> SensorReading? {
        try BTHome.decode(Fixture.serviceData(0xFCD2, hex, address: address), keys: key.map { Fixture.keys(address, $0) } ?? SensorKeys())
    }

    @Test func decryptsWithTheRightKey() throws {
        // test_bindkey_correct: temperature 25.06 °C, humidity 50.55 %, counter 0x33221100.
        let r = try #require(try Self.decode("41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14"))
        #expect(Fixture.text(r) == #"{"temperature":25.06,"humidity":50.55}"#)
        #expect(r.encrypted && r.refusal == nil && r.packetID == 0x3322_1100)
        // test_bthome_with_mac_encrypted: the MAC in the payload is the nonce's.
        #expect(Fixture.text(try Self.decode("43 a5 80 8f e6 48 54 f1 96 c0 6f fb 49 00 11 22 33 f0 8e cb de")) ==
                #"{"temperature":25.06,"humidity":50.55}"#)
        // test_bthome_motion: a Shelly BLU Motion.
        #expect(Fixture.text(try Self.decode("41 87 b9 00 11 22 33 72 b0 23 1f")) == #"{"motion":true}"#)
    }

    @Test func anEncryptedTriggerBasedButtonDecrypts() throws {
        // test_encrypted_shelly_blu_button_event: device information 0x45 (encrypted, trigger based),
        // counter BA 01 00 00 (little endian) before the MIC.
        let r = try #require(try Self.decode("45 0a eb 84 46 7f 85 ba 01 00 00 31 88 78 8c", address: "B4:35:22:F5:3D:A4",
                                             key: "90bffd73cb6b26ef58a7a8eba9232036"))
        #expect(r.refusal == nil && r.triggerBased && r.packetID == 0x1BA)
    }

    @Test func aWrongOrMissingKeyGivesEncryptedAndAReasonNeverValues() throws {
        // test_bindkey_wrong.
        let wrong = try #require(try Self.decode("41 d2 fc ef e5 2e b2 12 d6 00 11 22 33 bc 38 c9 66", address: "A4:C1:38:8D:18:B2",
                                                 key: "814aac74c4f17b6c1581e1ab87816b99"))
        #expect(wrong.encrypted && wrong.values.isEmpty)
        #expect(wrong.refusal == "encrypted; decryption failed for A4:C1:38:8D:18:B2 (wrong key?)")
        let missing = try #require(try Self.decode("41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14", key: nil))
        #expect(missing.encrypted && missing.values.isEmpty)
        #expect(missing.refusal == #"encrypted; no key for 54:48:E6:8F:80:A5: add one under "keys" in the config"#)
        // A key of the wrong length is refused, not used.
        let short = try #require(try Self.decode("41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14", key: "231d39c1d7cc1ab1aee224cd096db9"))
        #expect(short.values.isEmpty && short.refusal == "encrypted; the key for 54:48:E6:8F:80:A5 has 15 bytes, needs 16")
    }

    @Test func aTamperedPayloadFailsAuthentication() throws {
        // One bit of the ciphertext of test_bindkey_correct flipped.
        let r = try #require(try Self.decode("41 a5 72 66 c9 5f 73 00 11 22 33 78 23 72 14"))
        #expect(r.values.isEmpty && r.refusal != nil)
    }

    @Test func aTooShortEncryptedPayloadIsAnError() {
        // test_too_short_encryption_advertisement.
        #expect(throws: SensorDecodeError.self) { try Self.decode("41 ba 0d b0 7a ee f6 00") }
    }
}
