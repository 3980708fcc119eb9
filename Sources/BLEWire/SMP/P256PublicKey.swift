/// A P-256 public key as SMP carries it: X and Y, each 32 octets most significant first
/// (the Pairing Public Key PDU sends each least significant first, Vol 3, Part H, 3.5.6).
/// SMP checks that the point is on the curve (`validate()`).
///
///     let key = P256PublicKey(x: x, y: y)   // nil unless each coordinate is 32 octets
public struct P256PublicKey: Sendable, Hashable {
    public var x: [UInt8]
    public var y: [UInt8]

    /// A key from its coordinates; nil unless each is 32 octets. Whether the point is on the
    /// curve is checked by SMP's `validate()` and `P256KeyPair.sharedSecret(with:)`.
    public init?(x: [UInt8], y: [UInt8]) {
        guard x.count == 32, y.count == 32 else { return nil }
        self.x = x
        self.y = y
    }
}
