import BLECore
import BLEWire

/// The Security Manager's cryptographic toolbox (Core Spec 5.4 Vol 3, Part H, 2.2).
///
/// 128-bit arguments are `UInt128`s; 256-bit ones (P-256 X coordinates, the DHKey) are 32
/// octets most significant first. Messages are concatenated most significant octet first,
/// as the specification writes them.
///
///     let confirm = try SMPToolbox.f4(u: ourX, v: peerX, x: nonce, z: 0)
public enum SMPToolbox {
    /// ah, the random address hash (2.2.2): e(k, padding || r) mod 2^24; `r` is 24 bits.
    public static func ah(k: UInt128, r: UInt32) throws(CryptoError) -> UInt32 {
        let out = try AES.encrypt(key: k, UInt128(r & 0xFF_FFFF))
        return UInt32(truncatingIfNeeded: out) & 0xFF_FFFF
    }

    /// The data signing algorithm (2.4.5): the MAC of a Signed Write Command is the 64 most
    /// significant bits of AES-CMAC with the CSRK over m || SignCounter. `message` is m as
    /// sent (opcode, handle, value: least significant octet first, like the 32-bit counter
    /// after it), so the whole is reversed into the CMAC's most-significant-first order.
    ///
    ///     let mac = try SMPToolbox.signature(csrk: csrk, message: [0xD2, 0x03, 0x00] + value, signCounter: 0)
    public static func signature(csrk: UInt128, message: [UInt8], signCounter: UInt32) throws(CryptoError) -> UInt64 {
        let counter = (0..<4).map { UInt8(truncatingIfNeeded: signCounter >> (8 * $0)) }
        let mac = try AES.cmac(key: csrk, message: (message + counter).reversed())
        return UInt64(truncatingIfNeeded: mac >> 64)
    }

    /// c1, the LE legacy pairing confirm value (2.2.3). `preq` and `pres` are the 7-octet
    /// Pairing Request and Response PDUs as sent; `iat`/`rat` are the address types
    /// (0 public, 1 random); `ia`/`ra` the initiating and responding addresses.
    public static func c1(k: UInt128, r: UInt128, preq: [UInt8], pres: [UInt8], iat: UInt8, ia: BluetoothAddress, rat: UInt8, ra: BluetoothAddress) throws(CryptoError) -> UInt128 {
        precondition(preq.count == 7 && pres.count == 7, "c1 takes the 7-octet pairing PDUs")
        // p1 = pres || preq || rat' || iat', p2 = padding || ia || ra; the first octet of a PDU
        // is its least significant one.
        let p1 = UInt128(littleEndianBytes: pres) << 72 | UInt128(littleEndianBytes: preq) << 16 | UInt128(rat & 1) << 8 | UInt128(iat & 1)
        let p2 = UInt128(ia.rawValue) << 48 | UInt128(ra.rawValue)
        return try AES.encrypt(key: k, try AES.encrypt(key: k, r ^ p1) ^ p2)
    }

    /// s1, the LE legacy STK (2.2.4): e(k, r1' || r2') with the low 64 bits of each.
    public static func s1(k: UInt128, r1: UInt128, r2: UInt128) throws(CryptoError) -> UInt128 {
        let low: UInt128 = 0xFFFF_FFFF_FFFF_FFFF
        return try AES.encrypt(key: k, (r1 & low) << 64 | (r2 & low))
    }

    /// f4, the LE Secure Connections confirm value (2.2.6): AES-CMAC_X(U || V || Z).
    public static func f4(u: [UInt8], v: [UInt8], x: UInt128, z: UInt8) throws(CryptoError) -> UInt128 {
        precondition(u.count == 32 && v.count == 32, "f4 takes two 256-bit values")
        return try AES.cmac(key: x, message: u + v + [z])
    }

    /// f5, the LE Secure Connections key generation (2.2.7): MacKey and LTK from the DHKey `w`,
    /// the two nonces and the two addresses (initiating first).
    public static func f5(w: [UInt8], n1: UInt128, n2: UInt128, a1: LEAddress, a2: LEAddress) throws(CryptoError) -> (macKey: UInt128, ltk: UInt128) {
        precondition(w.count == 32, "f5 takes a 256-bit DHKey")
        let salt: UInt128 = 0x6C88_8391_AAF5_A538_6037_0BDB_5A60_83BE
        let t = try AES.cmac(key: salt, message: w)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65] // "btle"
        let body = keyID + n1.bigEndianBytes + n2.bigEndianBytes + address56(a1) + address56(a2) + [0x01, 0x00]
        let macKey = try AES.cmac(key: t, message: [0x00] + body)
        let ltk = try AES.cmac(key: t, message: [0x01] + body)
        return (macKey, ltk)
    }

    /// f6, the LE Secure Connections check value (2.2.8): AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2).
    /// `ioCap` is AuthReq, OOB data flag, IO capability (most significant first).
    public static func f6(w: UInt128, n1: UInt128, n2: UInt128, r: UInt128, ioCap: [UInt8], a1: LEAddress, a2: LEAddress) throws(CryptoError) -> UInt128 {
        precondition(ioCap.count == 3, "f6 takes a 24-bit IOcap")
        return try AES.cmac(key: w, message: n1.bigEndianBytes + n2.bigEndianBytes + r.bigEndianBytes + ioCap + address56(a1) + address56(a2))
    }

    /// g2, the numeric comparison value (2.2.9): AES-CMAC_X(U || V || Y) mod 2^32; the six
    /// digits shown are this mod 10^6.
    public static func g2(u: [UInt8], v: [UInt8], x: UInt128, y: UInt128) throws(CryptoError) -> UInt32 {
        precondition(u.count == 32 && v.count == 32, "g2 takes two 256-bit values")
        return UInt32(truncatingIfNeeded: try AES.cmac(key: x, message: u + v + y.bigEndianBytes))
    }

    /// h6, the link key conversion function (2.2.10): AES-CMAC_W(keyID).
    public static func h6(w: UInt128, keyID: UInt32) throws(CryptoError) -> UInt128 {
        try AES.cmac(key: w, message: withUnsafeBytes(of: keyID.bigEndian, Array.init))
    }

    /// h7, the link key conversion function with a salt (2.2.11): AES-CMAC_SALT(W).
    public static func h7(salt: UInt128, w: UInt128) throws(CryptoError) -> UInt128 {
        try AES.cmac(key: salt, message: w.bigEndianBytes)
    }

    /// An address as f5 and f6 take it: 7 octets, the type (0 public, 1 random) first.
    static func address56(_ a: LEAddress) -> [UInt8] {
        [a.type.isRandom ? 1 : 0] + a.address.littleEndianBytes.reversed()
    }
}
