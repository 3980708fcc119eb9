/// The Characteristic Properties bit field of a characteristic declaration (Core Spec 5.4,
/// Vol 3, Part G, 3.3.1.1, Table 3.5).
///
///     characteristic.properties.contains(.notify)
///     characteristic.properties.description   // "read, notify"
public struct GATTCharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = GATTCharacteristicProperties(rawValue: 0x01)
    public static let read = GATTCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = GATTCharacteristicProperties(rawValue: 0x04)
    public static let write = GATTCharacteristicProperties(rawValue: 0x08)
    public static let notify = GATTCharacteristicProperties(rawValue: 0x10)
    public static let indicate = GATTCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = GATTCharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = GATTCharacteristicProperties(rawValue: 0x80)

    /// The specification's property names, in bit order.
    public var names: [String] {
        let all: [(GATTCharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"),
            (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
            (.authenticatedSignedWrites, "authenticatedSignedWrites"), (.extendedProperties, "extendedProperties"),
        ]
        return all.filter { contains($0.0) }.map(\.1)
    }

    /// "read, notify", or "none".
    public var description: String { rawValue == 0 ? "none" : names.joined(separator: ", ") }
}
