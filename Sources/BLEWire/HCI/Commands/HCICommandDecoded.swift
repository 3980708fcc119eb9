/// A command packet decoded into the commands a controller has to interpret; anything else is
/// kept as `.other`. Encoding with `packet` gives back the original bytes, with one exception:
/// the octets of LE Set Advertising Data / Scan Response Data past Data_Length carry no
/// meaning (Vol 4, Part E, 7.8.7, 7.8.8) and are written back as zeros.
///
///     switch try HCICommandDecoded(packet) {
///     case .leSetScanEnable(let p): scanning = p.enable
///     default: break
///     }
public enum HCICommandDecoded: Hashable, Sendable {
    case disconnect(HCICommand.Disconnect)
    case readRemoteVersionInformation(handle: UInt16)
    case setEventMask(UInt64)
    case reset
    case setEventMaskPage2(UInt64)
    case writeLEHostSupported(leSupportedHost: Bool, unused: UInt8)
    case readLocalVersionInformation
    case readLocalSupportedCommands
    case readLocalSupportedFeatures
    case readBufferSize
    case readBDADDR
    case readRSSI(handle: UInt16)
    case readEncryptionKeySize(handle: UInt16)
    case leSetEventMask(UInt64)
    case leReadBufferSize
    case leReadBufferSizeV2
    case leReadLocalSupportedFeatures
    case leSetRandomAddress(BluetoothAddress)
    case leSetAdvertisingParameters(HCICommand.LESetAdvertisingParameters)
    case leSetAdvertisingData(HCICommand.LESetAdvertisingData)
    case leSetScanResponseData(HCICommand.LESetAdvertisingData)
    case leSetAdvertisingEnable(Bool)
    case leSetScanParameters(HCICommand.LESetScanParameters)
    case leSetScanEnable(HCICommand.LESetScanEnable)
    case leCreateConnection(HCICommand.LECreateConnection)
    case leCreateConnectionCancel
    case leConnectionUpdate(HCICommand.LEConnectionUpdate)
    case leReadRemoteFeatures(handle: UInt16)
    case leEnableEncryption(HCICommand.LEEnableEncryption)
    case leLongTermKeyRequestReply(HCICommand.LELongTermKeyRequestReply)
    case leLongTermKeyRequestNegativeReply(handle: UInt16)
    case leRemoteConnectionParameterRequestReply(HCICommand.LERemoteConnectionParameterRequestReply)
    case leRemoteConnectionParameterRequestNegativeReply(HCICommand.LERemoteConnectionParameterRequestNegativeReply)
    case leSetDataLength(HCICommand.LESetDataLength)
    case leReadSuggestedDefaultDataLength
    case leWriteSuggestedDefaultDataLength(txOctets: UInt16, txTime: UInt16)
    case leReadPHY(handle: UInt16)
    case leSetDefaultPHY(allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8)
    case leSetPHY(HCICommand.LESetPHY)
    case leSetExtendedScanParameters(HCICommand.LESetExtendedScanParameters)
    case leSetExtendedScanEnable(HCICommand.LESetExtendedScanEnable)
    case leExtendedCreateConnection(HCICommand.LEExtendedCreateConnection)
    case leSetAdvertisingSetRandomAddress(handle: UInt8, address: BluetoothAddress)
    case leSetExtendedAdvertisingParameters(HCICommand.LESetExtendedAdvertisingParameters)
    case leSetExtendedAdvertisingData(HCICommand.LESetExtendedAdvertisingData)
    case leSetExtendedScanResponseData(HCICommand.LESetExtendedAdvertisingData)
    case leSetExtendedAdvertisingEnable(HCICommand.LESetExtendedAdvertisingEnable)
    case leReadMaximumAdvertisingDataLength
    case leReadNumberOfSupportedAdvertisingSets
    case leRemoveAdvertisingSet(handle: UInt8)
    /// Any other command, kept as it came.
    case other(HCICommandPacket)

    /// Decodes a command the controller interprets; the parameters must match the command's
    /// table exactly (no missing or trailing octets).
    public init(_ packet: HCICommandPacket) throws(DecodeError) {
        let p = packet.parameters
        func none(_ what: StaticString) throws(DecodeError) {
            try ByteReader(p, context: what).expectEnd()
        }
        func handle(_ what: StaticString) throws(DecodeError) -> UInt16 {
            var r = ByteReader(p, context: what)
            let h = try r.u16()
            try r.expectEnd()
            return h
        }
        func mask(_ what: StaticString) throws(DecodeError) -> UInt64 {
            var r = ByteReader(p, context: what)
            let m = try r.u64()
            try r.expectEnd()
            return m
        }
        switch packet.opcode.rawValue {
        case 0x0406: self = .disconnect(try .init(parameters: p))
        case 0x041D: self = .readRemoteVersionInformation(handle: try handle("HCI_Read_Remote_Version_Information"))
        case 0x0C01: self = .setEventMask(try mask("HCI_Set_Event_Mask"))
        case 0x0C03: try none("HCI_Reset"); self = .reset
        case 0x0C63: self = .setEventMaskPage2(try mask("HCI_Set_Event_Mask_Page_2"))
        case 0x0C6D:
            var r = ByteReader(p, context: "HCI_Write_LE_Host_Support")
            let supported = try r.bool("LE_Supported_Host")
            let unused = try r.u8()
            try r.expectEnd()
            self = .writeLEHostSupported(leSupportedHost: supported, unused: unused)
        case 0x1001: try none("HCI_Read_Local_Version_Information"); self = .readLocalVersionInformation
        case 0x1002: try none("HCI_Read_Local_Supported_Commands"); self = .readLocalSupportedCommands
        case 0x1003: try none("HCI_Read_Local_Supported_Features"); self = .readLocalSupportedFeatures
        case 0x1005: try none("HCI_Read_Buffer_Size"); self = .readBufferSize
        case 0x1009: try none("HCI_Read_BD_ADDR"); self = .readBDADDR
        case 0x1405: self = .readRSSI(handle: try handle("HCI_Read_RSSI"))
        case 0x1408: self = .readEncryptionKeySize(handle: try handle("HCI_Read_Encryption_Key_Size"))
        case 0x2001: self = .leSetEventMask(try mask("HCI_LE_Set_Event_Mask"))
        case 0x2002: try none("HCI_LE_Read_Buffer_Size"); self = .leReadBufferSize
        case 0x2060: try none("HCI_LE_Read_Buffer_Size_v2"); self = .leReadBufferSizeV2
        case 0x2003: try none("HCI_LE_Read_Local_Supported_Features"); self = .leReadLocalSupportedFeatures
        case 0x2005:
            var r = ByteReader(p, context: "HCI_LE_Set_Random_Address")
            let a = try r.address()
            try r.expectEnd()
            self = .leSetRandomAddress(a)
        case 0x2006: self = .leSetAdvertisingParameters(try .init(parameters: p))
        case 0x2008: self = .leSetAdvertisingData(try .init(parameters: p))
        case 0x2009: self = .leSetScanResponseData(try .init(parameters: p))
        case 0x200A:
            var r = ByteReader(p, context: "HCI_LE_Set_Advertising_Enable")
            let e = try r.bool("Advertising_Enable")
            try r.expectEnd()
            self = .leSetAdvertisingEnable(e)
        case 0x200B: self = .leSetScanParameters(try .init(parameters: p))
        case 0x200C: self = .leSetScanEnable(try .init(parameters: p))
        case 0x200D: self = .leCreateConnection(try .init(parameters: p))
        case 0x200E: try none("HCI_LE_Create_Connection_Cancel"); self = .leCreateConnectionCancel
        case 0x2013: self = .leConnectionUpdate(try .init(parameters: p))
        case 0x2016: self = .leReadRemoteFeatures(handle: try handle("HCI_LE_Read_Remote_Features"))
        case 0x2019: self = .leEnableEncryption(try .init(parameters: p))
        case 0x201A: self = .leLongTermKeyRequestReply(try .init(parameters: p))
        case 0x201B: self = .leLongTermKeyRequestNegativeReply(handle: try handle("HCI_LE_Long_Term_Key_Request_Negative_Reply"))
        case 0x2020: self = .leRemoteConnectionParameterRequestReply(try .init(parameters: p))
        case 0x2021: self = .leRemoteConnectionParameterRequestNegativeReply(try .init(parameters: p))
        case 0x2022: self = .leSetDataLength(try .init(parameters: p))
        case 0x2023: try none("HCI_LE_Read_Suggested_Default_Data_Length"); self = .leReadSuggestedDefaultDataLength
        case 0x2024:
            var r = ByteReader(p, context: "HCI_LE_Write_Suggested_Default_Data_Length")
            let octets = try r.u16(), time = try r.u16()
            try r.expectEnd()
            self = .leWriteSuggestedDefaultDataLength(txOctets: octets, txTime: time)
        case 0x2030: self = .leReadPHY(handle: try handle("HCI_LE_Read_PHY"))
        case 0x2031:
            var r = ByteReader(p, context: "HCI_LE_Set_Default_PHY")
            let all = try r.u8(), tx = try r.u8(), rx = try r.u8()
            try r.expectEnd()
            self = .leSetDefaultPHY(allPHYs: all, txPHYs: tx, rxPHYs: rx)
        case 0x2032: self = .leSetPHY(try .init(parameters: p))
        case 0x2041: self = .leSetExtendedScanParameters(try .init(parameters: p))
        case 0x2042: self = .leSetExtendedScanEnable(try .init(parameters: p))
        case 0x2043: self = .leExtendedCreateConnection(try .init(parameters: p))
        case 0x2035:
            var r = ByteReader(p, context: "HCI_LE_Set_Advertising_Set_Random_Address")
            let h = try r.u8(), a = try r.address()
            try r.expectEnd()
            self = .leSetAdvertisingSetRandomAddress(handle: h, address: a)
        case 0x2036: self = .leSetExtendedAdvertisingParameters(try .init(parameters: p))
        case 0x2037: self = .leSetExtendedAdvertisingData(try .init(parameters: p))
        case 0x2038: self = .leSetExtendedScanResponseData(try .init(parameters: p, context: "HCI_LE_Set_Extended_Scan_Response_Data"))
        case 0x2039: self = .leSetExtendedAdvertisingEnable(try .init(parameters: p))
        case 0x203A: try none("HCI_LE_Read_Maximum_Advertising_Data_Length"); self = .leReadMaximumAdvertisingDataLength
        case 0x203B: try none("HCI_LE_Read_Number_of_Supported_Advertising_Sets"); self = .leReadNumberOfSupportedAdvertisingSets
        case 0x203C:
            var r = ByteReader(p, context: "HCI_LE_Remove_Advertising_Set")
            let h = try r.u8()
            try r.expectEnd()
            self = .leRemoveAdvertisingSet(handle: h)
        default: self = .other(packet)
        }
    }

    /// The command packet.
    public var packet: HCICommandPacket {
        switch self {
        case .disconnect(let c): return c.packet
        case .readRemoteVersionInformation(let h): return HCICommand.readRemoteVersionInformation(handle: h)
        case .setEventMask(let m): return HCICommand.setEventMask(m)
        case .reset: return HCICommand.reset()
        case .setEventMaskPage2(let m): return HCICommand.setEventMaskPage2(m)
        case .writeLEHostSupported(let s, let unused):
            return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C6D), parameters: [s ? 1 : 0, unused])
        case .readLocalVersionInformation: return HCICommand.readLocalVersionInformation()
        case .readLocalSupportedCommands: return HCICommand.readLocalSupportedCommands()
        case .readLocalSupportedFeatures: return HCICommand.readLocalSupportedFeatures()
        case .readBufferSize: return HCICommand.readBufferSize()
        case .readBDADDR: return HCICommand.readBDADDR()
        case .readRSSI(let h): return HCICommand.readRSSI(handle: h)
        case .readEncryptionKeySize(let h): return HCICommand.readEncryptionKeySize(handle: h)
        case .leSetEventMask(let m): return HCICommand.leSetEventMask(m)
        case .leReadBufferSize: return HCICommand.leReadBufferSize()
        case .leReadBufferSizeV2: return HCICommand.leReadBufferSizeV2()
        case .leReadLocalSupportedFeatures: return HCICommand.leReadLocalSupportedFeatures()
        case .leSetRandomAddress(let a): return HCICommand.leSetRandomAddress(a)
        case .leSetAdvertisingParameters(let c): return c.packet
        case .leSetAdvertisingData(let c): return c.packet
        case .leSetScanResponseData(let c): return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2009), parameters: c.parameters)
        case .leSetAdvertisingEnable(let e): return HCICommand.leSetAdvertisingEnable(e)
        case .leSetScanParameters(let c): return c.packet
        case .leSetScanEnable(let c): return c.packet
        case .leCreateConnection(let c): return c.packet
        case .leCreateConnectionCancel: return HCICommand.leCreateConnectionCancel()
        case .leConnectionUpdate(let c): return c.packet
        case .leReadRemoteFeatures(let h): return HCICommand.leReadRemoteFeatures(handle: h)
        case .leEnableEncryption(let c): return c.packet
        case .leLongTermKeyRequestReply(let c): return c.packet
        case .leLongTermKeyRequestNegativeReply(let h): return HCICommand.leLongTermKeyRequestNegativeReply(handle: h)
        case .leRemoteConnectionParameterRequestReply(let c): return c.packet
        case .leRemoteConnectionParameterRequestNegativeReply(let c): return c.packet
        case .leSetDataLength(let c): return c.packet
        case .leReadSuggestedDefaultDataLength: return HCICommand.leReadSuggestedDefaultDataLength()
        case .leWriteSuggestedDefaultDataLength(let o, let t): return HCICommand.leWriteSuggestedDefaultDataLength(txOctets: o, txTime: t)
        case .leReadPHY(let h): return HCICommand.leReadPHY(handle: h)
        case .leSetDefaultPHY(let a, let t, let r): return HCICommand.leSetDefaultPHY(allPHYs: a, txPHYs: t, rxPHYs: r)
        case .leSetPHY(let c): return c.packet
        case .leSetExtendedScanParameters(let c): return c.packet
        case .leSetExtendedScanEnable(let c): return c.packet
        case .leExtendedCreateConnection(let c): return c.packet
        case .leSetAdvertisingSetRandomAddress(let h, let a): return HCICommand.leSetAdvertisingSetRandomAddress(handle: h, address: a)
        case .leSetExtendedAdvertisingParameters(let c): return c.packet
        case .leSetExtendedAdvertisingData(let c): return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2037), parameters: c.parameters)
        case .leSetExtendedScanResponseData(let c): return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2038), parameters: c.parameters)
        case .leSetExtendedAdvertisingEnable(let c): return c.packet
        case .leReadMaximumAdvertisingDataLength: return HCICommand.leReadMaximumAdvertisingDataLength()
        case .leReadNumberOfSupportedAdvertisingSets: return HCICommand.leReadNumberOfSupportedAdvertisingSets()
        case .leRemoveAdvertisingSet(let h): return HCICommand.leRemoveAdvertisingSet(handle: h)
        case .other(let p): return p
        }
    }
}
