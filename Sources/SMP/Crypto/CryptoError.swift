/// A failure of the cryptographic primitives under the Security Manager (OpenSSL libcrypto).
public enum CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// AES-128 encryption of one block failed inside libcrypto.
    case aesFailed
    /// AES-CMAC failed inside libcrypto (EVP_MAC "CMAC" with AES-128-CBC).
    case cmacFailed
    /// P-256 key pair generation failed inside libcrypto.
    case keyGenerationFailed
    /// A private key is not a valid P-256 scalar.
    case invalidPrivateKey
    /// A peer's public key is not a point on P-256 (Vol 3, Part H, 2.3.5.6.1; the invalid-curve
    /// attack CVE-2018-5383): pairing must fail with DHKey Check Failed.
    case invalidPublicKey
    /// ECDH key agreement failed inside libcrypto.
    case ecdhFailed

    public var description: String {
        switch self {
        case .aesFailed: return "AES-128 encryption failed in libcrypto (is OpenSSL 3 installed?)"
        case .cmacFailed: return "AES-CMAC failed in libcrypto (EVP_MAC CMAC with AES-128-CBC; is OpenSSL 3 installed?)"
        case .keyGenerationFailed: return "P-256 key generation failed in libcrypto"
        case .invalidPrivateKey: return "the P-256 private key is zero or not below the group order"
        case .invalidPublicKey: return "the peer's public key is not a point on P-256 (invalid-curve attack, CVE-2018-5383): refused"
        case .ecdhFailed: return "P-256 ECDH failed in libcrypto"
        }
    }
}
