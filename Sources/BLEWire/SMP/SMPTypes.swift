/// IO Capability (Vol 3, Part H, 3.5.1, Table 3.4). Values 0x05-0xFF are reserved and kept as
/// received so a PDU re-encodes to the same bytes.
public struct IOCapability: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let displayOnly = IOCapability(rawValue: 0x00)
    public static let displayYesNo = IOCapability(rawValue: 0x01)
    public static let keyboardOnly = IOCapability(rawValue: 0x02)
    public static let noInputNoOutput = IOCapability(rawValue: 0x03)
    public static let keyboardDisplay = IOCapability(rawValue: 0x04)

    public var isReserved: Bool { rawValue > 0x04 }

    public var description: String {
        switch rawValue {
        case 0x00: return "DisplayOnly"
        case 0x01: return "DisplayYesNo"
        case 0x02: return "KeyboardOnly"
        case 0x03: return "NoInputNoOutput"
        case 0x04: return "KeyboardDisplay"
        default: return "reserved IO capability 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// AuthReq (Vol 3, Part H, 3.5.1, Figure 3.3): bonding flags, MITM, SC, Keypress, CT2.
public struct AuthenticationRequirements: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags = 0b01.
    public static let bonding = AuthenticationRequirements(rawValue: 0x01)
    public static let mitm = AuthenticationRequirements(rawValue: 0x04)
    public static let secureConnections = AuthenticationRequirements(rawValue: 0x08)
    public static let keypress = AuthenticationRequirements(rawValue: 0x10)
    public static let ct2 = AuthenticationRequirements(rawValue: 0x20)

    public var description: String {
        var parts: [String] = []
        if contains(.bonding) { parts.append("bonding") }
        if contains(.mitm) { parts.append("MITM") }
        if contains(.secureConnections) { parts.append("SC") }
        if contains(.keypress) { parts.append("keypress") }
        if contains(.ct2) { parts.append("CT2") }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}

/// Initiator/Responder Key Distribution (Vol 3, Part H, 3.6.1, Figure 3.11).
public struct KeyDistribution: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LTK, EDIV and Rand (legacy) — with Secure Connections only EncKey's presence matters.
    public static let encryptionKey = KeyDistribution(rawValue: 0x01)
    /// IRK and the identity address.
    public static let identityKey = KeyDistribution(rawValue: 0x02)
    /// CSRK.
    public static let signingKey = KeyDistribution(rawValue: 0x04)
    /// BR/EDR link key derivation (not used on an LE-only host).
    public static let linkKey = KeyDistribution(rawValue: 0x08)

    public var description: String {
        var parts: [String] = []
        if contains(.encryptionKey) { parts.append("EncKey") }
        if contains(.identityKey) { parts.append("IdKey") }
        if contains(.signingKey) { parts.append("SignKey") }
        if contains(.linkKey) { parts.append("LinkKey") }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}

/// Keypress notification types (Vol 3, Part H, 3.5.8, Table 3.9).
public struct KeypressNotificationType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryStarted = Self(rawValue: 0)
    public static let passkeyDigitEntered = Self(rawValue: 1)
    public static let passkeyDigitErased = Self(rawValue: 2)
    public static let passkeyCleared = Self(rawValue: 3)
    public static let passkeyEntryCompleted = Self(rawValue: 4)
}
