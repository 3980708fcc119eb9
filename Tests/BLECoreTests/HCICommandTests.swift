import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLEWire

/// Command builders against byte layouts written by hand from the parameter tables of
/// Core Spec 5.4 Vol 4, Part E, 7.1 to 7.8 (opcode = OGF << 10 | OCF, fields little-endian).
@Suite struct HCICommandTests {
    static let peer = BluetoothAddress("C0:11:22:33:44:55")!
    static let peerLE: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]
    static let conn = LEConnectionParameters(intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: 0x0001,
                                             supervisionTimeout: 0x01F4, minCELength: 0x0002, maxCELength: 0x0003)
    static let connBytes: [UInt8] = [0x18, 0x00, 0x28, 0x00, 0x01, 0x00, 0xF4, 0x01, 0x02, 0x00, 0x03, 0x00]

    /// (built packet, expected opcode, expected parameters, whether HCICommandDecoded models it)
    static var cases: [(HCICommandPacket, UInt16, [UInt8], Bool)] {
        [
            (HCICommand.reset(), 0x0C03, [], true),
            (HCICommand.readLocalVersionInformation(), 0x1001, [], true),
            (HCICommand.readLocalSupportedCommands(), 0x1002, [], true),
            (HCICommand.readLocalSupportedFeatures(), 0x1003, [], true),
            (HCICommand.readBDADDR(), 0x1009, [], true),
            (HCICommand.readBufferSize(), 0x1005, [], true),
            (HCICommand.setEventMask(0x2000_0000_0000_1FFF), 0x0C01, [0xFF, 0x1F, 0, 0, 0, 0, 0, 0x20], true),
            (HCICommand.setEventMaskPage2(0x0000_0000_0080_0000), 0x0C63, [0, 0, 0x80, 0, 0, 0, 0, 0], true),
            (HCICommand.leSetEventMask(0x0000_0000_0008_0A1F), 0x2001, [0x1F, 0x0A, 0x08, 0, 0, 0, 0, 0], true),
            (HCICommand.leReadBufferSize(), 0x2002, [], true),
            (HCICommand.leReadBufferSizeV2(), 0x2060, [], true),
            (HCICommand.leReadLocalSupportedFeatures(), 0x2003, [], true),
            (HCICommand.leSetRandomAddress(peer), 0x2005, peerLE, true),
            (HCICommand.writeLEHostSupported(true), 0x0C6D, [0x01, 0x00], true),
            // 7.8.10: LE_Scan_Type, LE_Scan_Interval, LE_Scan_Window, Own_Address_Type, Scanning_Filter_Policy
            (HCICommand.leSetScanParameters(.init(scanType: 1, scanInterval: 0x0060, scanWindow: 0x0030, ownAddressType: 1, filterPolicy: 0)),
             0x200B, [0x01, 0x60, 0x00, 0x30, 0x00, 0x01, 0x00], true),
            (HCICommand.leSetScanEnable(.init(enable: true, filterDuplicates: true)), 0x200C, [0x01, 0x01], true),
            // 7.8.64: Own_Address_Type, Scanning_Filter_Policy, Scanning_PHYs (1M | Coded), then per PHY
            (HCICommand.leSetExtendedScanParameters(.init(ownAddressType: 1, filterPolicy: 0,
                le1M: .init(scanType: 1, scanInterval: 0x0060, scanWindow: 0x0030),
                leCoded: .init(scanType: 0, scanInterval: 0x0120, scanWindow: 0x0110))),
             0x2041, [0x01, 0x00, 0x05, 0x01, 0x60, 0x00, 0x30, 0x00, 0x00, 0x20, 0x01, 0x10, 0x01], true),
            // 7.8.65: Enable, Filter_Duplicates, Duration, Period
            (HCICommand.leSetExtendedScanEnable(.init(enable: true, filterDuplicates: 2, duration: 0x0064, period: 0x0002)),
             0x2042, [0x01, 0x02, 0x64, 0x00, 0x02, 0x00], true),
            // 7.8.12: LE_Scan_Interval, LE_Scan_Window, Initiator_Filter_Policy, Peer_Address_Type,
            // Peer_Address, Own_Address_Type, then the six connection parameters.
            (HCICommand.leCreateConnection(.init(scanInterval: 0x0060, scanWindow: 0x0030, initiatorFilterPolicy: 0,
                                                 peer: LEAddress(peer, type: .random), ownAddressType: 0, connection: conn)),
             0x200D, [0x60, 0x00, 0x30, 0x00, 0x00, 0x01] + peerLE + [0x00] + connBytes, true),
            // 7.8.66: Initiator_Filter_Policy, Own_Address_Type, Peer_Address_Type, Peer_Address,
            // Initiating_PHYs (1M | 2M = 0x03), then per PHY scan interval, window and connection parameters.
            (HCICommand.leExtendedCreateConnection(.init(initiatorFilterPolicy: 0, ownAddressType: 1, peer: LEAddress(peer, type: .public),
                le1M: .init(scanInterval: 0x0060, scanWindow: 0x0060, connection: conn),
                le2M: .init(scanInterval: 0x0000, scanWindow: 0x0000, connection: conn))),
             0x2043, [0x00, 0x01, 0x00] + peerLE + [0x03, 0x60, 0x00, 0x60, 0x00] + connBytes + [0, 0, 0, 0] + connBytes, true),
            (HCICommand.leCreateConnectionCancel(), 0x200E, [], true),
            (HCICommand.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection), 0x0406, [0x40, 0x00, 0x13], true),
            (HCICommand.leConnectionUpdate(handle: 0x0041, conn), 0x2013, [0x41, 0x00] + connBytes, true),
            (HCICommand.leRemoteConnectionParameterRequestReply(handle: 0x0041, conn), 0x2020, [0x41, 0x00] + connBytes, true),
            (HCICommand.leRemoteConnectionParameterRequestNegativeReply(handle: 0x0041, reason: HCIStatus(rawValue: 0x3B)),
             0x2021, [0x41, 0x00, 0x3B], true),
            (HCICommand.leSetDataLength(handle: 0x0040, txOctets: 251, txTime: 2120), 0x2022, [0x40, 0x00, 0xFB, 0x00, 0x48, 0x08], true),
            (HCICommand.leReadSuggestedDefaultDataLength(), 0x2023, [], true),
            (HCICommand.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120), 0x2024, [0xFB, 0x00, 0x48, 0x08], true),
            // 7.8.49: Connection_Handle, All_PHYs, TX_PHYs, RX_PHYs, PHY_Options
            (HCICommand.leSetPHY(.init(handle: 0x0040, allPHYs: 0, txPHYs: 0x02, rxPHYs: 0x06, phyOptions: 0x0002)),
             0x2032, [0x40, 0x00, 0x00, 0x02, 0x06, 0x02, 0x00], true),
            (HCICommand.leSetDefaultPHY(allPHYs: 0, txPHYs: 3, rxPHYs: 3), 0x2031, [0x00, 0x03, 0x03], true),
            (HCICommand.leReadPHY(handle: 0x0040), 0x2030, [0x40, 0x00], true),
            (HCICommand.readRSSI(handle: 0x0040), 0x1405, [0x40, 0x00], true),
            // 7.8.24: Connection_Handle, Random_Number (8), Encrypted_Diversifier, Long_Term_Key (16), all LSO first
            (HCICommand.leEnableEncryption(handle: 0x0040, random: 0x0102_0304_0506_0708, ediv: 0x1234,
                                           longTermKey: 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF),
             0x2019, [0x40, 0x00, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x34, 0x12,
                      0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00], true),
            (HCICommand.leLongTermKeyRequestReply(handle: 0x0040, longTermKey: 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF),
             0x201A, [0x40, 0x00, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00], true),
            (HCICommand.leLongTermKeyRequestNegativeReply(handle: 0x0040), 0x201B, [0x40, 0x00], true),
            (HCICommand.leReadRemoteFeatures(handle: 0x0040), 0x2016, [0x40, 0x00], true),
            (HCICommand.readRemoteVersionInformation(handle: 0x0040), 0x041D, [0x40, 0x00], true),
            // 7.8.5: intervals, Advertising_Type, Own_Address_Type, Peer_Address_Type, Peer_Address,
            // Advertising_Channel_Map, Advertising_Filter_Policy
            (HCICommand.leSetAdvertisingParameters(.init(intervalMin: 0x00A0, intervalMax: 0x00B0, advertisingType: 0x03,
                ownAddressType: 1, peerAddressType: 0, peerAddress: .zero, channelMap: 0x07, filterPolicy: 0)),
             0x2006, [0xA0, 0x00, 0xB0, 0x00, 0x03, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00], true),
            // 7.8.7: Advertising_Data_Length then 31 octets
            (HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06]), 0x2008, [0x03, 0x02, 0x01, 0x06] + [UInt8](repeating: 0, count: 28), true),
            (HCICommand.leSetScanResponseData([0x02, 0x0A, 0x00]), 0x2009, [0x03, 0x02, 0x0A, 0x00] + [UInt8](repeating: 0, count: 28), true),
            (HCICommand.leSetAdvertisingEnable(true), 0x200A, [0x01], true),
        ]
    }

    static func packet(_ opcode: UInt16) -> HCICommandPacket {
        cases.first { $0.1 == opcode }?.0 ?? HCICommandPacket(opcode: HCIOpcode(rawValue: 0))
    }

    @Test func buildersMatchTheParameterTables() throws {
        for (packet, opcode, params, modelled) in Self.cases {
            #expect(packet.opcode.rawValue == opcode, "\(packet.opcode)")
            #expect(packet.parameters == params, "\(packet.opcode): \(packet.parameters.hexString())")
            let decoded = try HCICommandDecoded(packet)
            if case .other = decoded { #expect(!modelled, "\(packet.opcode) should decode") }
            #expect(decoded.packet == packet, "\(packet.opcode) round trip")
            // H4 framing: indicator, opcode LE, length.
            let h4 = HCIPacket.command(packet).h4
            #expect(Array(h4.prefix(4)) == [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(params.count)])
        }
    }

    @Test func decodedFormsCarryTheFields() throws {
        guard case .leExtendedCreateConnection(let c) = try HCICommandDecoded(Self.packet(0x2043)) else {
            Issue.record("not LE Extended Create Connection"); return
        }
        #expect(c.peerAddress == Self.peer && c.ownAddressType == 1 && c.initiatingPHYs == 0x03)
        #expect(c.le1M?.connection == Self.conn && c.le2M?.scanInterval == 0 && c.leCoded == nil)
        guard case .leSetExtendedScanParameters(let s) = try HCICommandDecoded(Self.packet(0x2041)) else {
            Issue.record("not LE Set Extended Scan Parameters"); return
        }
        #expect(s.le1M == .init(scanType: 1, scanInterval: 0x60, scanWindow: 0x30))
        #expect(s.leCoded == .init(scanType: 0, scanInterval: 0x120, scanWindow: 0x110))
        guard case .leEnableEncryption(let e) = try HCICommandDecoded(Self.packet(0x2019)) else {
            Issue.record("not LE Enable Encryption"); return
        }
        #expect(e.random == 0x0102_0304_0506_0708 && e.ediv == 0x1234 && e.longTermKey == 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF)
        #expect(try HCICommandDecoded(HCICommandPacket(opcode: HCIOpcode(rawValue: 0xFC61), parameters: [1, 2]))
                == .other(HCICommandPacket(opcode: HCIOpcode(rawValue: 0xFC61), parameters: [1, 2])))
    }

    @Test func malformedCommandParametersAreTypedErrors() throws {
        // Every truncation and one trailing octet of each modelled command with parameters.
        for (packet, _, params, modelled) in Self.cases where modelled {
            for n in 0..<params.count {
                #expect(throws: DecodeError.self, "\(packet.opcode) cut to \(n)") {
                    try HCICommandDecoded(HCICommandPacket(opcode: packet.opcode, parameters: Array(params.prefix(n))))
                }
            }
            #expect(throws: DecodeError.self, "\(packet.opcode) with a trailing octet") {
                try HCICommandDecoded(HCICommandPacket(opcode: packet.opcode, parameters: params + [0]))
            }
        }
        // Scanning_PHYs with the reserved LE 2M bit, Initiating_PHYs with bit 3, a boolean of 2,
        // an advertising Data_Length above 31.
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedScanParameters(parameters: [0, 0, 0x02, 1, 0x10, 0, 0x10, 0]) }
        #expect(throws: DecodeError.self) { try HCICommand.LEExtendedCreateConnection(parameters: [0, 0, 0] + Self.peerLE + [0x08]) }
        #expect(throws: DecodeError.self) { try HCICommand.LESetScanEnable(parameters: [0x02, 0x00]) }
        #expect(throws: DecodeError.self) { try HCICommand.LESetAdvertisingData(parameters: [32] + [UInt8](repeating: 0, count: 31)) }
    }

    @Test func opcodeAndStatusNames() {
        #expect(HCIOpcode(rawValue: 0x2041).description == "HCI_LE_Set_Extended_Scan_Parameters (0x2041)")
        #expect(HCIOpcode(rawValue: 0x0C7A).description == "HCI_Write_Secure_Connections_Host_Support (0x0C7A)")
        #expect(HCIOpcode(rawValue: 0x0C84).description == "HCI_Set_Min_Encryption_Key_Size (0x0C84)")
        #expect(HCIOpcode(rawValue: 0x2060).description == "HCI_LE_Read_Buffer_Size_v2 (0x2060)")
        #expect(HCIOpcode(rawValue: 0xFC61).description == "opcode 0xFC61 (OGF 0x3f, OCF 0x61)")
        #expect(HCIStatus(rawValue: 0x3B).description == "Unacceptable Connection Parameters (0x3B)")
        #expect(HCIStatus(rawValue: 0x46).name == "Too Late")
        #expect(HCIStatus(rawValue: 0x12).name == "Invalid HCI Command Parameters")
        #expect(HCIStatus(rawValue: 0x2B).name == "Unknown HCI error")   // reserved
        // Every code 0x00...0x48 except the reserved ones has a name.
        for code in UInt8(0)...0x48 where ![0x2B, 0x31, 0x33].contains(code) {
            #expect(HCIStatus.names[code] != nil, "0x\(String(code, radix: 16))")
        }
    }
}
