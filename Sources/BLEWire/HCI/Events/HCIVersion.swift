/// An HCI / LMP / LL version number (Assigned Numbers, 2.1 "Core Specification Version").
///
///     HCIVersion(rawValue: 0x0D).description   // "Bluetooth 5.4 (0x0D)"
public struct HCIVersion: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let v4_0 = HCIVersion(rawValue: 0x06)
    public static let v4_2 = HCIVersion(rawValue: 0x08)
    public static let v5_0 = HCIVersion(rawValue: 0x09)
    public static let v5_2 = HCIVersion(rawValue: 0x0B)
    public static let v5_4 = HCIVersion(rawValue: 0x0D)

    static let names: [String] = [
        "1.0b", "1.1", "1.2", "2.0 + EDR", "2.1 + EDR", "3.0 + HS", "4.0", "4.1", "4.2",
        "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.1",
    ]

    /// "Bluetooth 5.4", or "unknown version" for numbers not yet assigned.
    public var name: String {
        Int(rawValue) < Self.names.count ? "Bluetooth " + Self.names[Int(rawValue)] : "unknown version"
    }

    public var description: String {
        "\(name) (\(rawValue.hex))"
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}
