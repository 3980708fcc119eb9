import BLEWire
import CCrypto

/// The curve checks of a peer's key, through libcrypto.
extension P256PublicKey {
    /// Throws `CryptoError.invalidPublicKey` unless the key is a point on P-256 other than the
    /// point at infinity (the check that defeats CVE-2018-5383).
    public func validate() throws(CryptoError) {
        let point = [0x04] + x + y
        let ok = point.withUnsafeBufferPointer { ccrypto_p256_point_valid($0.baseAddress) }
        guard ok == 1 else { throw .invalidPublicKey }
    }

    var uncompressed: [UInt8] { [0x04] + x + y }
}

/// A P-256 key pair for LE Secure Connections.
///
///     let ours = try P256KeyPair()
///     let dhKey = try ours.sharedSecret(with: peerKey)   // throws .invalidPublicKey off the curve
public struct P256KeyPair: Sendable {
    /// The private scalar, 32 octets most significant first.
    public let privateKey: [UInt8]
    public let publicKey: P256PublicKey

    /// A fresh key pair from libcrypto's random generator.
    public init() throws(CryptoError) {
        var priv = [UInt8](repeating: 0, count: 32)
        var point = [UInt8](repeating: 0, count: 65)
        let ok = priv.withUnsafeMutableBufferPointer { p in
            point.withUnsafeMutableBufferPointer { ccrypto_p256_generate(p.baseAddress, $0.baseAddress) }
        }
        guard ok == 1 else { throw .keyGenerationFailed }
        self.privateKey = priv
        self.publicKey = P256PublicKey(x: Array(point[1..<33]), y: Array(point[33..<65]))!
    }

    /// The key pair of a given private scalar (for example the debug key of Vol 3, Part H, 2.3.5.6.1).
    public init(privateKey: [UInt8]) throws(CryptoError) {
        guard privateKey.count == 32 else { throw .invalidPrivateKey }
        var point = [UInt8](repeating: 0, count: 65)
        let ok = privateKey.withUnsafeBufferPointer { p in
            point.withUnsafeMutableBufferPointer { ccrypto_p256_public(p.baseAddress, $0.baseAddress) }
        }
        guard ok == 1 else { throw .invalidPrivateKey }
        self.privateKey = privateKey
        self.publicKey = P256PublicKey(x: Array(point[1..<33]), y: Array(point[33..<65]))!
    }

    /// The DHKey: the X coordinate of privateKey × peer, 32 octets most significant first.
    /// Throws `.invalidPublicKey` when the peer's key is not on the curve.
    public func sharedSecret(with peer: P256PublicKey) throws(CryptoError) -> [UInt8] {
        try peer.validate()
        var out = [UInt8](repeating: 0, count: 32)
        let own = publicKey.uncompressed, other = peer.uncompressed
        let ok = privateKey.withUnsafeBufferPointer { p in
            own.withUnsafeBufferPointer { o in
                other.withUnsafeBufferPointer { q in
                    out.withUnsafeMutableBufferPointer { ccrypto_p256_ecdh(p.baseAddress, o.baseAddress, q.baseAddress, $0.baseAddress) }
                }
            }
        }
        guard ok == 1 else { throw .ecdhFailed }
        return out
    }
}
