/// The outcome of a command as its Command Complete return parameters tell it: the decoded
/// values on success, or the non-zero Status (decoded even when the rest is cut short).
///
///     switch try HCIReturn.decode(HCIReturn.ReadBDADDR.self, from: complete.returnParameters) {
///     case .success(let r): print(r.address)
///     case .failure(let status): print(status)
///     }
package enum HCICommandOutcome<Value: Hashable & Sendable>: Hashable, Sendable {
    case success(Value)
    case failure(HCIStatus)

    /// The value, or nil on failure.
    package var value: Value? {
        if case .success(let v) = self { return v }
        return nil
    }
}

/// Return parameters that follow the Status octet of a Command Complete event.
package protocol HCIReturnParameters: Hashable, Sendable {
    /// Names the command in error texts.
    static var context: StaticString { get }
    /// Decodes the fields after Status; the reader must be left at the end.
    init(afterStatus r: inout ByteReader) throws(DecodeError)
}

/// Return-parameter decoders for Command Complete (Vol 4, Part E, 7.3 to 7.8).
package enum HCIReturn {
    /// Status first; on success the rest must match the command's table exactly.
    package static func decode<R: HCIReturnParameters>(_ type: R.Type, from returnParameters: [UInt8]) throws(DecodeError) -> HCICommandOutcome<R> {
        var r = ByteReader(returnParameters, context: R.context)
        let status = HCIStatus(rawValue: try r.u8())
        guard status == .success else { return .failure(status) }
        let value = try R(afterStatus: &r)
        try r.expectEnd()
        return .success(value)
    }

    /// HCI_Read_Local_Version_Information (7.4.1).
    package struct ReadLocalVersionInformation: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_Local_Version_Information return parameters"
        package var hciVersion: HCIVersion
        package var hciSubversion: UInt16
        package var lmpVersion: HCIVersion
        package var companyIdentifier: UInt16
        package var lmpSubversion: UInt16

        package init(hciVersion: HCIVersion, hciSubversion: UInt16, lmpVersion: HCIVersion, companyIdentifier: UInt16, lmpSubversion: UInt16) {
            self.hciVersion = hciVersion
            self.hciSubversion = hciSubversion
            self.lmpVersion = lmpVersion
            self.companyIdentifier = companyIdentifier
            self.lmpSubversion = lmpSubversion
        }

        package init(afterStatus r: inout ByteReader) throws(DecodeError) {
            hciVersion = HCIVersion(rawValue: try r.u8()); hciSubversion = try r.u16()
            lmpVersion = HCIVersion(rawValue: try r.u8()); companyIdentifier = try r.u16(); lmpSubversion = try r.u16()
        }
    }

    /// HCI_Read_BD_ADDR (7.4.6).
    package struct ReadBDADDR: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_BD_ADDR return parameters"
        package var address: BluetoothAddress
        package init(address: BluetoothAddress) { self.address = address }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { address = try r.address() }
    }

    /// HCI_Read_Buffer_Size (7.4.5).
    package struct ReadBufferSize: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_Buffer_Size return parameters"
        package var aclDataPacketLength: UInt16
        package var synchronousDataPacketLength: UInt8
        package var totalNumACLDataPackets: UInt16
        package var totalNumSynchronousDataPackets: UInt16

        package init(aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8, totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16) {
            self.aclDataPacketLength = aclDataPacketLength
            self.synchronousDataPacketLength = synchronousDataPacketLength
            self.totalNumACLDataPackets = totalNumACLDataPackets
            self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
        }

        package init(afterStatus r: inout ByteReader) throws(DecodeError) {
            aclDataPacketLength = try r.u16(); synchronousDataPacketLength = try r.u8()
            totalNumACLDataPackets = try r.u16(); totalNumSynchronousDataPackets = try r.u16()
        }
    }

    /// HCI_LE_Read_Buffer_Size [v1] (7.8.2). A zero length means: use the shared ACL buffers.
    package struct LEReadBufferSize: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Buffer_Size return parameters"
        package var leACLDataPacketLength: UInt16
        package var totalNumLEACLDataPackets: UInt8

        package init(leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        }

        package init(afterStatus r: inout ByteReader) throws(DecodeError) {
            leACLDataPacketLength = try r.u16(); totalNumLEACLDataPackets = try r.u8()
        }
    }

    /// HCI_LE_Read_Buffer_Size [v2] (7.8.2).
    package struct LEReadBufferSizeV2: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Buffer_Size [v2] return parameters"
        package var leACLDataPacketLength: UInt16
        package var totalNumLEACLDataPackets: UInt8
        package var isoDataPacketLength: UInt16
        package var totalNumISODataPackets: UInt8

        package init(leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8, isoDataPacketLength: UInt16, totalNumISODataPackets: UInt8) {
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
            self.isoDataPacketLength = isoDataPacketLength
            self.totalNumISODataPackets = totalNumISODataPackets
        }

        package init(afterStatus r: inout ByteReader) throws(DecodeError) {
            leACLDataPacketLength = try r.u16(); totalNumLEACLDataPackets = try r.u8()
            isoDataPacketLength = try r.u16(); totalNumISODataPackets = try r.u8()
        }
    }

    /// HCI_Read_Local_Supported_Commands (7.4.2).
    package struct ReadLocalSupportedCommands: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_Local_Supported_Commands return parameters"
        package var commands: HCISupportedCommands
        package init(commands: HCISupportedCommands) { self.commands = commands }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { commands = HCISupportedCommands(octets: try r.bytes(64)) }
    }

    /// HCI_Read_Local_Supported_Features (7.4.3): the LMP features page 0 (Vol 2, Part C, 3.3).
    package struct ReadLocalSupportedFeatures: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_Local_Supported_Features return parameters"
        package var lmpFeatures: UInt64
        package init(lmpFeatures: UInt64) { self.lmpFeatures = lmpFeatures }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { lmpFeatures = try r.u64() }
        /// LMP feature bit 38: LE Supported (Controller).
        package var leSupportedController: Bool { lmpFeatures & (1 << 38) != 0 }
    }

    /// HCI_LE_Read_Local_Supported_Features (7.8.3).
    package struct LEReadLocalSupportedFeatures: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Local_Supported_Features return parameters"
        package var features: LEFeatures
        package init(features: LEFeatures) { self.features = features }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { features = LEFeatures(rawValue: try r.u64()) }
    }

    /// HCI_Read_RSSI (7.5.4).
    package struct ReadRSSI: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_RSSI return parameters"
        package var handle: UInt16
        /// dBm.
        package var rssi: Int8
        package init(handle: UInt16, rssi: Int8) { self.handle = handle; self.rssi = rssi }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { handle = try r.u16(); rssi = try r.i8() }
    }

    /// HCI_Read_Encryption_Key_Size (7.5.7): the key size of an encrypted link, in octets.
    package struct ReadEncryptionKeySize: HCIReturnParameters {
        package static let context: StaticString = "HCI_Read_Encryption_Key_Size return parameters"
        package var handle: UInt16
        package var keySize: UInt8
        package init(handle: UInt16, keySize: UInt8) { self.handle = handle; self.keySize = keySize }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { handle = try r.u16(); keySize = try r.u8() }
    }

    /// HCI_LE_Read_PHY (7.8.47). PHY: 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
    package struct LEReadPHY: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_PHY return parameters"
        package var handle: UInt16
        package var txPHY: UInt8
        package var rxPHY: UInt8
        package init(handle: UInt16, txPHY: UInt8, rxPHY: UInt8) { self.handle = handle; self.txPHY = txPHY; self.rxPHY = rxPHY }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { handle = try r.u16(); txPHY = try r.u8(); rxPHY = try r.u8() }
    }

    /// HCI_LE_Read_Suggested_Default_Data_Length (7.8.34).
    package struct LEReadSuggestedDefaultDataLength: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Suggested_Default_Data_Length return parameters"
        package var txOctets: UInt16
        package var txTime: UInt16
        package init(txOctets: UInt16, txTime: UInt16) { self.txOctets = txOctets; self.txTime = txTime }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { txOctets = try r.u16(); txTime = try r.u16() }
    }
}
