import Testing
import BLECore
@testable import SMP
import BLEWire

/// Types holding key material print everything but the keys: `print`, interpolation,
/// `String(reflecting:)` and `dump` show `<redacted>` where a key is. The keys are sample
/// values of Vol 3, Part H, Appendix D (D.3 f5's LTK, D.7 ah's IRK, D.3 f5's MacKey as a CSRK,
/// D.1 f4's inputs and output as OOB r and C, the P-256 private key A of D.1).
@Suite struct KeyRedactionTests {
    static let ltk = u128("69867911 69d7cd23 980522b5 94750a38")
    static let irk = u128("ec0234a3 57c8ad05 341010a6 0a397d9b")
    static let csrk = u128("2965f176 a1084a02 fd3f6a20 ce636e20")
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xA6_A5_A4_A3_A2_A1), type: .public)

    /// Every form a key could take in text: hex both byte orders, either case, and decimal.
    static func forms(_ key: UInt128) -> [String] {
        let be = key.bigEndianBytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let le = key.littleEndianBytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        return [be, be.uppercased(), le, le.uppercased(), String(key), String(key, radix: 16)]
    }

    /// The text of `value` every way Swift prints it.
    static func texts(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return ["\(value)", String(describing: value), String(reflecting: value), dumped]
    }

    static func expectNoKey(_ value: Any, keys: [UInt128]) {
        for text in texts(value) {
            #expect(text.contains("<redacted>"), "\(text)")
            for key in keys {
                for form in forms(key) { #expect(!text.contains(form), "\(text) shows a key") }
            }
        }
    }

    @Test func aBondPrintsItsPeerAndNotItsKeys() {
        let key = LongTermKey(key: Self.ltk, ediv: 0x1234, rand: 0xABCD_EF01_2345_6789, keySize: 16, authenticated: true, secureConnections: false)
        var bond = Bond(peer: Self.peer, longTermKey: key, localLongTermKey: key, identityResolvingKey: Self.irk,
                        signatureKey: Self.csrk, created: 1_700_000_000)
        bond.localSignatureKey = Self.csrk
        Self.expectNoKey(bond, keys: [Self.ltk, Self.irk, Self.csrk, 0xABCD_EF01_2345_6789])
        let text = "\(bond)"
        #expect(text.contains("A6:A5:A4:A3:A2:A1"))
        #expect(text.contains("ediv: 4660"))
        #expect(text.contains("keySize: 16"))
        #expect(text.contains("created: 1700000000"))
        // The values stay where the code that needs them reads them.
        #expect(bond.longTermKey?.key == Self.ltk && bond.identityResolvingKey == Self.irk)
    }

    @Test func absentKeysReadNil() {
        let text = "\(Bond(peer: Self.peer))"
        #expect(text.contains("longTermKey: nil") && text.contains("identityResolvingKey: nil") && text.contains("signatureKey: nil"))
        #expect(!text.contains("<redacted>"))
    }

    @Test func aLongTermKeyAloneIsRedacted() {
        let key = LongTermKey(key: Self.ltk, ediv: 0, rand: 0, keySize: 16, authenticated: true, secureConnections: true)
        Self.expectNoKey(key, keys: [Self.ltk])
        #expect("\(key)".contains("secureConnections: true"))
    }

    @Test func oobDataIsRedacted() {
        let oob = OOBData(random: u128("d5cb8454 d177733e ffffb2ec 712baeab"), confirm: u128("f2c916f1 07a9bd1c f1eda1be a974872d"))
        Self.expectNoKey(oob, keys: [oob.random, oob.confirm])
    }

    @Test func aP256KeyPairHidesItsPrivateKey() throws {
        let privateA = hex("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
        let pair = try P256KeyPair(privateKey: privateA)
        let high = UInt128(bigEndianBytes: privateA[0..<16]), low = UInt128(bigEndianBytes: privateA[16..<32])
        Self.expectNoKey(pair, keys: [high, low])
        for text in Self.texts(pair) {
            // [UInt8]'s own printing: the first octets of the key as decimal array elements.
            #expect(!text.contains("[63, 73, 246, 212"), "\(text)")
        }
    }
}
