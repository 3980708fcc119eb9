/// Advertising data type codes (Assigned Numbers, section 2.3 "Common Data Types"; formats in
/// Core Specification Supplement, Part A).
///
///     if type == ADType.completeLocalName { ... }
public enum ADType {
    public static let flags: UInt8 = 0x01
    public static let incompleteServiceUUIDs16: UInt8 = 0x02
    public static let completeServiceUUIDs16: UInt8 = 0x03
    public static let incompleteServiceUUIDs32: UInt8 = 0x04
    public static let completeServiceUUIDs32: UInt8 = 0x05
    public static let incompleteServiceUUIDs128: UInt8 = 0x06
    public static let completeServiceUUIDs128: UInt8 = 0x07
    public static let shortenedLocalName: UInt8 = 0x08
    public static let completeLocalName: UInt8 = 0x09
    public static let txPowerLevel: UInt8 = 0x0A
    public static let classOfDevice: UInt8 = 0x0D
    public static let peripheralConnectionIntervalRange: UInt8 = 0x12
    public static let serviceSolicitationUUIDs16: UInt8 = 0x14
    public static let serviceSolicitationUUIDs128: UInt8 = 0x15
    public static let serviceData16: UInt8 = 0x16
    public static let publicTargetAddress: UInt8 = 0x17
    public static let randomTargetAddress: UInt8 = 0x18
    public static let appearance: UInt8 = 0x19
    public static let advertisingInterval: UInt8 = 0x1A
    public static let leBluetoothDeviceAddress: UInt8 = 0x1B
    public static let leRole: UInt8 = 0x1C
    public static let serviceSolicitationUUIDs32: UInt8 = 0x1F
    public static let serviceData32: UInt8 = 0x20
    public static let serviceData128: UInt8 = 0x21
    public static let uri: UInt8 = 0x24
    public static let leSupportedFeatures: UInt8 = 0x27
    public static let advertisingIntervalLong: UInt8 = 0x2F
    public static let broadcastName: UInt8 = 0x30
    public static let manufacturerSpecificData: UInt8 = 0xFF
}

/// The Flags AD type bits (Supplement, Part A, 1.3).
///
///     flags.contains(.leGeneralDiscoverable)
public struct AdvertisingFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let leLimitedDiscoverable = AdvertisingFlags(rawValue: 1 << 0)
    public static let leGeneralDiscoverable = AdvertisingFlags(rawValue: 1 << 1)
    /// BR/EDR Not Supported.
    public static let brEDRNotSupported = AdvertisingFlags(rawValue: 1 << 2)
    public static let simultaneousLEAndBREDRController = AdvertisingFlags(rawValue: 1 << 3)
    /// Bit 4 is "Previously Used" in current specifications (it was the host bit before).
    public static let previouslyUsed = AdvertisingFlags(rawValue: 1 << 4)
}
