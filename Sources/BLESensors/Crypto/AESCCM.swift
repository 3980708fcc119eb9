import CCrypto

/// AES-128-CCM decryption (NIST SP 800-38C) through OpenSSL, for the encrypted BTHome and
/// MiBeacon payloads.
///
///     let plain = AESCCM.decrypt(key: key, nonce: nonce, aad: [0x11], ciphertext: body, tag: mic)
enum AESCCM {
    /// The plaintext, or nil when the key is not 16 bytes or the tag does not authenticate.
    static func decrypt(key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], ciphertext: ArraySlice<UInt8>, tag: ArraySlice<UInt8>) -> [UInt8]? {
        guard key.count == 16, (7...13).contains(nonce.count), tag.count == 4 || tag.count == 8 || tag.count == 16 else { return nil }
        let input = Array(ciphertext)
        let mac = Array(tag)
        var out = [UInt8](repeating: 0, count: input.count)
        let ok = out.withUnsafeMutableBufferPointer { o in
            ccrypto_aes128_ccm_decrypt(key, nonce, nonce.count, aad, aad.count, input, input.count, mac, mac.count, o.baseAddress)
        }
        return ok == 1 ? out : nil
    }
}
