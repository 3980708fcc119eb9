import Testing
import BLECore
@testable import SMP
import BLEWire

/// AES-CMAC against RFC 4493, section 4 (examples 1 to 4, key 2b7e1516...), and P-256 ECDH
/// against the Core Specification's P-256 sample data (Vol 2, Part G, 7.1.2, data set 1).
struct CryptoTests {
    let rfcKey = hex("2b7e1516 28aed2a6 abf71588 09cf4f3c")
    let rfcMessage = hex("""
        6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
        30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710
        """)

    @Test func aesCMACMatchesRFC4493Examples() throws {
        #expect(try AES.cmac(key: rfcKey, message: []) == hex("bb1d6929 e9593728 7fa37d12 9b756746"))
        #expect(try AES.cmac(key: rfcKey, message: Array(rfcMessage[0..<16])) == hex("070a16b4 6b4d4144 f79bdd9d d04a287c"))
        #expect(try AES.cmac(key: rfcKey, message: Array(rfcMessage[0..<40])) == hex("dfa66747 de9ae630 30ca3261 1497c827"))
        #expect(try AES.cmac(key: rfcKey, message: rfcMessage) == hex("51f0bebf 7e3b9d92 fc497417 79363cfe"))
    }

    /// FIPS-197 Appendix C.1 (AES-128): key 000102...0f, plaintext 00112233...ff.
    @Test func aes128MatchesFIPS197() throws {
        let out = try AES.encrypt(key: hex("000102030405060708090a0b0c0d0e0f"), block: hex("00112233445566778899aabbccddeeff"))
        #expect(out == hex("69c4e0d86a7b0430d8cdb78070b4c55a"))
    }

    let privateA = hex("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    let privateB = hex("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    let publicAX = hex("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    let publicAY = hex("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")
    let publicBX = hex("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
    let publicBY = hex("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
    let dhKey = hex("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")

    @Test func p256SampleKeysGiveTheSampleDHKey() throws {
        let a = try P256KeyPair(privateKey: privateA)
        let b = try P256KeyPair(privateKey: privateB)
        #expect(a.publicKey.x == publicAX && a.publicKey.y == publicAY)
        #expect(b.publicKey.x == publicBX && b.publicKey.y == publicBY)
        #expect(try a.sharedSecret(with: b.publicKey) == dhKey)
        #expect(try b.sharedSecret(with: a.publicKey) == dhKey)
    }

    @Test func generatedKeysAgree() throws {
        let a = try P256KeyPair(), b = try P256KeyPair()
        #expect(a.privateKey != b.privateKey)
        #expect(try a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
    }

    /// CVE-2018-5383: a point off the curve (the sample key with Y changed, or Y = 0 as the
    /// published attack sends) is refused before any ECDH.
    @Test func pointsOffTheCurveAreRefused() throws {
        let a = try P256KeyPair(privateKey: privateA)
        var badY = publicBY
        badY[31] ^= 0x01
        let offCurve = P256PublicKey(x: publicBX, y: badY)!
        #expect(throws: CryptoError.invalidPublicKey) { try a.sharedSecret(with: offCurve) }
        let zeroY = P256PublicKey(x: publicBX, y: [UInt8](repeating: 0, count: 32))!
        #expect(throws: CryptoError.invalidPublicKey) { try zeroY.validate() }
        let zero = P256PublicKey(x: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32))!
        #expect(throws: CryptoError.invalidPublicKey) { try zero.validate() }
        let beyondField = P256PublicKey(x: [UInt8](repeating: 0xFF, count: 32), y: publicBY)!
        #expect(throws: CryptoError.invalidPublicKey) { try beyondField.validate() }
        #expect(P256PublicKey(x: publicBX, y: Array(publicBY.dropLast())) == nil)
    }

    @Test func zeroPrivateKeyIsRefused() {
        #expect(throws: CryptoError.invalidPrivateKey) { try P256KeyPair(privateKey: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.invalidPrivateKey) { try P256KeyPair(privateKey: [1, 2, 3]) }
    }
}
