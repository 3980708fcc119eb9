import BLECore

/// What `print`, string interpolation, `dump` and `String(reflecting:)` show of the types that
/// hold key material: everything but the keys, which read `<redacted>`. The values themselves
/// stay in their properties (`bond.longTermKey?.key`) for the code that needs them.
///
///     print(bond)   // Bond(peer: ..., longTermKey: LongTermKey(key: <redacted>, ...), identityResolvingKey: <redacted>, ...)
enum Redacted {
    static let text = "<redacted>"
    /// `<redacted>` when the optional key is there, `nil` when it is not.
    static func optional(_ key: UInt128?) -> String { key == nil ? "nil" : text }
}

extension LongTermKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "LongTermKey(key: \(Redacted.text), ediv: \(ediv), rand: \(Redacted.text), keySize: \(keySize), "
            + "authenticated: \(authenticated), secureConnections: \(secureConnections))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["key": Redacted.text, "ediv": ediv, "rand": Redacted.text, "keySize": keySize,
                                "authenticated": authenticated, "secureConnections": secureConnections])
    }
}

extension Bond: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "Bond(peer: \(peer), identityAddress: \(identityAddress.map { "\($0)" } ?? "nil"), "
            + "longTermKey: \(longTermKey.map { "\($0)" } ?? "nil"), localLongTermKey: \(localLongTermKey.map { "\($0)" } ?? "nil"), "
            + "identityResolvingKey: \(Redacted.optional(identityResolvingKey)), signatureKey: \(Redacted.optional(signatureKey)), "
            + "localSignatureKey: \(Redacted.optional(localSignatureKey)), localSignCounter: \(localSignCounter), created: \(created))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["peer": peer, "identityAddress": identityAddress as Any, "longTermKey": longTermKey as Any,
                                "localLongTermKey": localLongTermKey as Any,
                                "identityResolvingKey": Redacted.optional(identityResolvingKey),
                                "signatureKey": Redacted.optional(signatureKey),
                                "localSignatureKey": Redacted.optional(localSignatureKey),
                                "localSignCounter": localSignCounter, "created": created])
    }
}

extension OOBData: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "OOBData(random: \(Redacted.text), confirm: \(Redacted.text))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["random": Redacted.text, "confirm": Redacted.text]) }
}

extension P256KeyPair: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "P256KeyPair(privateKey: \(Redacted.text), publicKey: \(publicKey))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["privateKey": Redacted.text, "publicKey": publicKey]) }
}
