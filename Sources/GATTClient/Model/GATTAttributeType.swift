import BLEWire

/// The attribute types GATT itself defines (Core Spec 5.4, Vol 3, Part G, 3 and 7) and the
/// characteristic types the client acts on.
///
///     try await bearer.request(.readByGroupTypeRequest(range: .all, type: GATTAttributeType.primaryService))
public enum GATTAttributeType {
    /// «Primary Service» (0x2800), Vol 3, Part G, 3.1.
    public static let primaryService = BluetoothUUID(uuid16: 0x2800)
    /// «Secondary Service» (0x2801).
    public static let secondaryService = BluetoothUUID(uuid16: 0x2801)
    /// «Include» (0x2802), Vol 3, Part G, 3.2.
    public static let include = BluetoothUUID(uuid16: 0x2802)
    /// «Characteristic» declaration (0x2803), Vol 3, Part G, 3.3.1.
    public static let characteristic = BluetoothUUID(uuid16: 0x2803)
    /// Characteristic Extended Properties (0x2900).
    public static let extendedProperties = BluetoothUUID(uuid16: 0x2900)
    /// Characteristic User Description (0x2901).
    public static let userDescription = BluetoothUUID(uuid16: 0x2901)
    /// Client Characteristic Configuration (0x2902), Vol 3, Part G, 3.3.3.3.
    public static let clientCharacteristicConfiguration = BluetoothUUID(uuid16: 0x2902)
    /// Generic Access service (0x1800).
    public static let genericAccessService = BluetoothUUID(uuid16: 0x1800)
    /// Generic Attribute service (0x1801), Vol 3, Part G, 7.
    public static let genericAttributeService = BluetoothUUID(uuid16: 0x1801)
    /// Service Changed (0x2A05), Vol 3, Part G, 7.1.
    public static let serviceChanged = BluetoothUUID(uuid16: 0x2A05)
    /// Database Hash (0x2B2A), Vol 3, Part G, 7.3.
    public static let databaseHash = BluetoothUUID(uuid16: 0x2B2A)
    /// Client Supported Features (0x2B29), Vol 3, Part G, 7.2.
    public static let clientSupportedFeatures = BluetoothUUID(uuid16: 0x2B29)
    /// Server Supported Features (0x2B3A), Vol 3, Part G, 7.4.
    public static let serverSupportedFeatures = BluetoothUUID(uuid16: 0x2B3A)
}

extension BluetoothUUID {
    /// "Heart Rate Measurement (2A37)" for assigned UUIDs, the UUID alone otherwise.
    public var gattDisplayName: String {
        if let name = AssignedNumbers.name(for: self) { return "\(name) (\(self))" }
        return description
    }
}
