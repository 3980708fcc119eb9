/// Link Control, Controller & Baseband, Informational and Status commands
/// (Vol 4, Part E, 7.1, 7.3, 7.4, 7.5).
extension HCICommand {
    /// HCI_Disconnect (7.1.6).
    public static func disconnect(handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) -> HCICommandPacket {
        Disconnect(handle: handle, reason: reason).packet
    }
    /// HCI_Read_Remote_Version_Information (7.1.23).
    public static func readRemoteVersionInformation(handle: UInt16) -> HCICommandPacket { handleOnly(0x041D, handle) }
    /// HCI_Set_Event_Mask (7.3.1).
    public static func setEventMask(_ mask: UInt64) -> HCICommandPacket { eventMask(0x0C01, mask) }
    /// HCI_Reset (7.3.2).
    public static func reset() -> HCICommandPacket { bare(0x0C03) }
    /// HCI_Set_Event_Mask_Page_2 (7.3.69).
    public static func setEventMaskPage2(_ mask: UInt64) -> HCICommandPacket { eventMask(0x0C63, mask) }
    /// HCI_Write_LE_Host_Support (7.3.79): LE_Supported_Host, then the unused Simultaneous_LE_Host octet.
    public static func writeLEHostSupported(_ supported: Bool = true) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C6D), parameters: [supported ? 1 : 0, 0])
    }
    /// HCI_Read_Local_Version_Information (7.4.1).
    public static func readLocalVersionInformation() -> HCICommandPacket { bare(0x1001) }
    /// HCI_Read_Local_Supported_Commands (7.4.2).
    public static func readLocalSupportedCommands() -> HCICommandPacket { bare(0x1002) }
    /// HCI_Read_Local_Supported_Features (7.4.3).
    public static func readLocalSupportedFeatures() -> HCICommandPacket { bare(0x1003) }
    /// HCI_Read_Buffer_Size (7.4.5).
    public static func readBufferSize() -> HCICommandPacket { bare(0x1005) }
    /// HCI_Read_BD_ADDR (7.4.6).
    public static func readBDADDR() -> HCICommandPacket { bare(0x1009) }
    /// HCI_Read_RSSI (7.5.4).
    public static func readRSSI(handle: UInt16) -> HCICommandPacket { handleOnly(0x1405, handle) }
    /// HCI_Read_Encryption_Key_Size (7.5.7).
    public static func readEncryptionKeySize(handle: UInt16) -> HCICommandPacket { handleOnly(0x1408, handle) }

    static func eventMask(_ opcode: UInt16, _ mask: UInt64) -> HCICommandPacket {
        var p: [UInt8] = []
        p.appendLE(mask)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: p)
    }
}

extension HCICommand {
/// HCI_Disconnect parameters (Vol 4, Part E, 7.1.6): Connection_Handle, Reason.
public struct Disconnect: HCICommandParameters {
    public static let opcode = HCIOpcode(rawValue: 0x0406)
    public var handle: UInt16
    public var reason: HCIStatus

    public init(handle: UInt16, reason: HCIStatus) {
        self.handle = handle
        self.reason = reason
    }

    public init(parameters: [UInt8]) throws(DecodeError) {
        var r = ByteReader(parameters, context: "HCI_Disconnect")
        handle = try r.u16()
        reason = HCIStatus(rawValue: try r.u8())
        try r.expectEnd()
    }

    public func encode(into out: inout [UInt8]) {
        out.appendLE(handle)
        out.append(reason.rawValue)
    }
}
}
