import CCrypto

/// AES-128 and AES-CMAC over OpenSSL's EVP interfaces.
///
///     let tag = try AES.cmac(key: k, message: m)
public enum AES {
    /// The security function e: AES-128 of one block (Vol 3, Part H, 2.2.1). Key and block are
    /// octets most significant first, as FIPS-197 takes them.
    public static func encrypt(key: [UInt8], block: [UInt8]) throws(CryptoError) -> [UInt8] {
        precondition(key.count == 16 && block.count == 16, "AES-128 takes a 16-octet key and block")
        var out = [UInt8](repeating: 0, count: 16)
        let ok = key.withUnsafeBufferPointer { k in
            block.withUnsafeBufferPointer { b in
                out.withUnsafeMutableBufferPointer { o in
                    ccrypto_aes128_block(k.baseAddress, b.baseAddress, o.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw .aesFailed }
        return out
    }

    /// e(k, plaintext) on 128-bit values.
    public static func encrypt(key: UInt128, _ plaintext: UInt128) throws(CryptoError) -> UInt128 {
        UInt128(bigEndianBytes: try encrypt(key: key.bigEndianBytes, block: plaintext.bigEndianBytes))
    }

    /// AES-CMAC (RFC 4493) with a 128-bit key, octets most significant first.
    public static func cmac(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        precondition(key.count == 16, "AES-CMAC takes a 16-octet key")
        var out = [UInt8](repeating: 0, count: 16)
        let ok = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    ccrypto_aes_cmac(k.baseAddress, m.baseAddress, m.count, o.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw .cmacFailed }
        return out
    }

    /// AES-CMAC_key(message) as a 128-bit value.
    public static func cmac(key: UInt128, message: [UInt8]) throws(CryptoError) -> UInt128 {
        UInt128(bigEndianBytes: try cmac(key: key.bigEndianBytes, message: message))
    }
}
