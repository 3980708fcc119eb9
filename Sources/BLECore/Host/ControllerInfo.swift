import BLEWire

/// What a controller says about itself during bring-up.
///
///     let info = try await central.powerOn()
///     print(info.manufacturerName ?? "?", info.hciVersion, info.leFeatures.names)
public struct ControllerInfo: Sendable, Hashable {
    public var address: BluetoothAddress
    public var hciVersion: HCIVersion
    public var hciSubversion: UInt16
    public var lmpVersion: HCIVersion
    public var lmpSubversion: UInt16
    /// Company identifier of the manufacturer.
    public var manufacturer: UInt16
    public var supportedCommands: HCISupportedCommands
    /// LMP features page 0.
    public var lmpFeatures: UInt64
    public var leFeatures: LEFeatures
    /// LE_ACL_Data_Packet_Length and Total_Num_LE_ACL_Data_Packets in use.
    public var aclPacketLength: Int
    public var aclPacketCount: Int
    /// True when the buffers came from the shared BR/EDR pool (LE Read Buffer Size reported 0).
    public var sharesBREDRBuffers: Bool

    /// The manufacturer's name from the Bluetooth SIG company identifiers.
    public var manufacturerName: String? { AssignedNumbers.companyName(manufacturer) }

    /// LMP feature bit 38: LE Supported (Controller). Controllers that answer LE commands but
    /// leave the bit clear still count: `leFeatures` was read successfully.
    public var supportsLE: Bool { lmpFeatures & (1 << 38) != 0 || leFeatures.rawValue != 0 || supports(.leReadLocalSupportedFeatures) }

    /// Whether the controller lists `opcode` as supported (unknown bitmap positions count as no).
    public func supports(_ opcode: HCIOpcode) -> Bool { supportedCommands.supports(opcode) ?? false }

    public var supportsExtendedScanning: Bool {
        leFeatures.contains(.leExtendedAdvertising) && supports(.leSetExtendedScanParameters) && supports(.leSetExtendedScanEnable)
    }

    public var supportsExtendedCreateConnection: Bool {
        leFeatures.contains(.leExtendedAdvertising) && supports(.leExtendedCreateConnection)
    }

    /// Roles the controller can take, from the supported commands.
    public var supportedRoles: [String] {
        var roles: [String] = []
        if supports(.leCreateConnection) || supports(.leExtendedCreateConnection) { roles.append("central") }
        if supports(.leSetAdvertisingEnable) || supports(HCIOpcode(rawValue: 0x2039)) { roles.append("peripheral") }
        if supports(.leSetScanEnable) || supports(.leSetExtendedScanEnable) { roles.append("observer") }
        return roles
    }
}

extension HCIOpcode {
    public static let leReadLocalSupportedFeatures = HCIOpcode(rawValue: 0x2003)
    public static let leSetAdvertisingEnable = HCIOpcode(rawValue: 0x200A)
    public static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)
    public static let leCreateConnection = HCIOpcode(rawValue: 0x200D)
    public static let leSetPHY = HCIOpcode(rawValue: 0x2032)
    public static let leSetExtendedScanParameters = HCIOpcode(rawValue: 0x2041)
    public static let leSetExtendedScanEnable = HCIOpcode(rawValue: 0x2042)
    public static let leExtendedCreateConnection = HCIOpcode(rawValue: 0x2043)
    public static let leReadBufferSizeV2 = HCIOpcode(rawValue: 0x2060)
}
