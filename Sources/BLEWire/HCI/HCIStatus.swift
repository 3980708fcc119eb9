/// An HCI status / error code (Core Spec Vol 1, Part F). Printed with its specification name.
///
///     HCIStatus(rawValue: 0x13).description   // "Remote User Terminated Connection (0x13)"
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    /// The controller failed (the reason links report after a Hardware Error event).
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    /// The peer (or controller) has no key for the link: the bond was forgotten.
    public static let pinOrKeyMissing = HCIStatus(rawValue: 0x06)
    public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let remoteUserTerminatedConnection = HCIStatus(rawValue: 0x13)
    public static let connectionTerminatedByLocalHost = HCIStatus(rawValue: 0x16)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)

    /// The specification's name, or "Unknown HCI error".
    public var name: String { HCIStatus.names[rawValue] ?? "Unknown HCI error" }

    public var description: String {
        "\(name) (\(rawValue.hex))"
    }
}
