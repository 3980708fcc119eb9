/// LE Controller commands for setup: event mask, buffers, features, addresses, PHY and data
/// length defaults (Vol 4, Part E, 7.8).
extension HCICommand {
    /// HCI_LE_Set_Event_Mask (7.8.1).
    public static func leSetEventMask(_ mask: UInt64) -> HCICommandPacket { eventMask(0x2001, mask) }
    /// HCI_LE_Read_Buffer_Size [v1] (7.8.2).
    public static func leReadBufferSize() -> HCICommandPacket { bare(0x2002) }
    /// HCI_LE_Read_Buffer_Size [v2] (7.8.2).
    public static func leReadBufferSizeV2() -> HCICommandPacket { bare(0x2060) }
    /// HCI_LE_Read_Local_Supported_Features (7.8.3).
    public static func leReadLocalSupportedFeatures() -> HCICommandPacket { bare(0x2003) }
    /// HCI_LE_Set_Random_Address (7.8.4).
    public static func leSetRandomAddress(_ address: BluetoothAddress) -> HCICommandPacket {
        var p: [UInt8] = []
        p.appendLE(address)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2005), parameters: p)
    }
    /// HCI_LE_Read_Suggested_Default_Data_Length (7.8.34).
    public static func leReadSuggestedDefaultDataLength() -> HCICommandPacket { bare(0x2023) }
    /// HCI_LE_Write_Suggested_Default_Data_Length (7.8.35).
    public static func leWriteSuggestedDefaultDataLength(txOctets: UInt16, txTime: UInt16) -> HCICommandPacket {
        var p: [UInt8] = []
        p.appendLE(txOctets); p.appendLE(txTime)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2024), parameters: p)
    }
    /// HCI_LE_Read_PHY (7.8.47).
    public static func leReadPHY(handle: UInt16) -> HCICommandPacket { handleOnly(0x2030, handle) }
    /// HCI_LE_Set_Default_PHY (7.8.48).
    public static func leSetDefaultPHY(allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2031), parameters: [allPHYs, txPHYs, rxPHYs])
    }
}
