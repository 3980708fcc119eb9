/// The Filter Accept List commands (Vol 4, Part E, 7.8.14 to 7.8.17). The list holds the
/// devices an initiator with Initiator_Filter_Policy 0x01 connects to (7.8.12, 7.8.66).
extension HCICommand {
    /// HCI_LE_Read_Filter_Accept_List_Size (7.8.14): returns Status, Filter_Accept_List_Size.
    public static func leReadFilterAcceptListSize() -> HCICommandPacket { bare(0x200F) }
    /// HCI_LE_Clear_Filter_Accept_List (7.8.15).
    public static func leClearFilterAcceptList() -> HCICommandPacket { bare(0x2010) }
    /// HCI_LE_Add_Device_To_Filter_Accept_List (7.8.16): Address_Type (0x00 public, 0x01
    /// random), Address least significant octet first.
    public static func leAddDeviceToFilterAcceptList(_ device: LEAddress) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2011), parameters: filterAcceptListEntry(device))
    }
    /// HCI_LE_Remove_Device_From_Filter_Accept_List (7.8.17): the same parameters as the add.
    public static func leRemoveDeviceFromFilterAcceptList(_ device: LEAddress) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2012), parameters: filterAcceptListEntry(device))
    }

    static func filterAcceptListEntry(_ device: LEAddress) -> [UInt8] {
        [device.type.isRandom ? 0x01 : 0x00] + device.address.littleEndianBytes
    }
}
