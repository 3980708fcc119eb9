import BLEWire

/// Security that this side's channel servers need of the link (LE security mode 1, Core Spec
/// 5.4 Vol 3, Part C, 10.2.1), checked at each LE or enhanced Credit Based Connection Request
/// the peer sends (Vol 3, Part A, 4.23 and 4.26). Opening channels is Connection+ChannelSecurity.swift.
extension Connection {
    /// The check a server registered with `security` and `minimumKeySize` runs at each
    /// request, on the executor; nil when it needs nothing.
    func channelServerSecurity(_ security: SecurityLevel, minimumKeySize: Int) -> (@Sendable () -> CreditBasedConnectionResult?)? {
        let minimum = min(max(minimumKeySize, CreditBasedConnectionResult.smallestKeySize), 16)
        guard security > .none || minimum > CreditBasedConnectionResult.smallestKeySize else { return nil }
        return { [weak self] in
            // A connection gone with its link refuses like a plain link would.
            guard let self else { return .channelServerRefusal(link: .none, keySize: nil, needed: security, minimumKeySize: minimum) }
            return self.assumeIsolated {
                .channelServerRefusal(link: $0.securityLevel, keySize: $0.encryptionKeySize, needed: security, minimumKeySize: minimum)
            }
        }
    }
}

extension CreditBasedConnectionResult {
    /// The smallest encryption key size, in octets (Vol 3, Part H, 2.3.4).
    static let smallestKeySize = 7

    /// The result that refuses a peer's channel request on a link at `level`, encrypted with a
    /// key of `keySize` octets (nil: not encrypted, or not known), to a server that needs
    /// `needed` and keys of at least `minimumKeySize` octets; nil when the link has both.
    /// Below `needed`: insufficient encryption (0x0008) when encryption is all the server
    /// needs, insufficient authentication (0x0005) when it needs MITM-protected keys (or
    /// Secure Connections), whatever the link has now. A key shorter than the minimum, or one
    /// of unknown size: insufficient encryption key size (0x0007); a plain link with only a
    /// minimum key size: 0x0008.
    ///
    ///     CreditBasedConnectionResult.channelServerRefusal(link: .none, keySize: nil, needed: .encrypted, minimumKeySize: 7) // .insufficientEncryption
    public static func channelServerRefusal(link level: SecurityLevel, keySize: Int?, needed: SecurityLevel,
                                            minimumKeySize: Int) -> CreditBasedConnectionResult? {
        if level < needed { return needed == .encrypted ? .insufficientEncryption : .insufficientAuthentication }
        guard minimumKeySize > smallestKeySize else { return nil }
        guard level > .none else { return .insufficientEncryption }
        guard let keySize, keySize >= minimumKeySize else { return .insufficientEncryptionKeySize }
        return nil
    }
}
