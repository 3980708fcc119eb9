import Testing
import BLECore
import BLEWire

/// Advertising commands and events against the parameter tables of the Core Specification
/// (Vol 4, Part E, 7.8.5 to 7.8.9, 7.8.53 to 7.8.58, 7.7.65.1 and 7.7.65.18): each expected
/// byte is a field of the table, little-endian.
@Suite struct AdvertisingCommandTests {
    @Test func legacyParametersFollowTheTable() throws {
        // 7.8.5: Interval_Min 0x00A0, Interval_Max 0x00A0 (100 ms), Type 0x02 ADV_SCAN_IND,
        // Own_Address_Type 0x01, Peer_Address_Type 0, Peer_Address 0, Channel_Map 0x07, Filter_Policy 0.
        let p = HCICommand.LESetAdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xA0, advertisingType: 0x02, ownAddressType: 0x01)
        #expect(p.packet.opcode.rawValue == 0x2006)
        #expect(p.parameters == [0xA0, 0x00, 0xA0, 0x00, 0x02, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
        // 7.8.7: Data_Length then 31 octets, unused ones zero.
        let data = HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06])
        #expect(data.opcode.rawValue == 0x2008)
        #expect(data.parameters == [0x03, 0x02, 0x01, 0x06] + [UInt8](repeating: 0, count: 28))
        #expect(HCICommand.leSetAdvertisingEnable(true).parameters == [0x01])
    }

    @Test func extendedParametersFollowTheTable() throws {
        let p = HCICommand.LESetExtendedAdvertisingParameters(
            handle: 0x01, properties: .legacyConnectable, primaryIntervalMin: 0x0000A0, primaryIntervalMax: 0x000140,
            ownAddressType: 0x01, txPower: -4, sid: 0x03)
        // 7.8.53: Handle, Properties (2), Interval_Min (3), Interval_Max (3), Channel_Map,
        // Own_Address_Type, Peer_Address_Type, Peer_Address (6), Filter_Policy, TX_Power,
        // Primary_PHY, Secondary_Max_Skip, Secondary_PHY, SID, Scan_Request_Notification_Enable.
        let expected: [UInt8] = [0x01, 0x13, 0x00, 0xA0, 0x00, 0x00, 0x40, 0x01, 0x00, 0x07, 0x01, 0x00,
                                 0, 0, 0, 0, 0, 0, 0x00, 0xFC, 0x01, 0x00, 0x01, 0x03, 0x00]
        #expect(p.packet.opcode.rawValue == 0x2036)
        #expect(p.parameters == expected)
        #expect(try HCICommand.LESetExtendedAdvertisingParameters(parameters: expected) == p)
        // Table 7.2: ADV_IND 0x0013, ADV_SCAN_IND 0x0012, ADV_NONCONN_IND 0x0010.
        #expect(HCICommand.AdvertisingEventProperties.legacyScannable.rawValue == 0x0012)
        #expect(HCICommand.AdvertisingEventProperties.legacyNonConnectable.rawValue == 0x0010)
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedAdvertisingParameters(parameters: Array(expected.dropLast())) }
    }

    @Test func extendedDataIsFragmentedAt251Octets() throws {
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let packets = HCICommand.LESetExtendedAdvertisingData.fragments(handle: 2, data: data, scanResponse: false)
        // 7.8.54: Handle, Operation (0x01 first, 0x00 intermediate, 0x02 last), Fragment_Preference 0x01, Length, Data.
        #expect(packets.map(\.opcode.rawValue) == [0x2037, 0x2037, 0x2037])
        #expect(packets.map { Array($0.parameters.prefix(4)) } == [[0x02, 0x01, 0x01, 0xFB], [0x02, 0x00, 0x01, 0xFB], [0x02, 0x02, 0x01, 0x62]])
        #expect(packets.flatMap { $0.parameters.dropFirst(4) } == data)
        // Data that fits in one command is Operation 0x03 (complete), also when empty.
        let one = HCICommand.LESetExtendedAdvertisingData.fragments(handle: 0, data: [], scanResponse: true)
        #expect(one.map(\.opcode.rawValue) == [0x2038])
        #expect(one.map(\.parameters) == [[0x00, 0x03, 0x01, 0x00]])
    }

    @Test func hostileExtendedDataIsRefused() {
        // Advertising_Data_Length 252 is above the 251 the table allows.
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedAdvertisingData(parameters: [0, 0x03, 0x01, 252] + [UInt8](repeating: 0, count: 252)) }
        // Operation 0x05 is reserved.
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedAdvertisingData(parameters: [0, 0x05, 0x01, 0]) }
        // Length 4 with 3 octets present.
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedAdvertisingData(parameters: [0, 0x03, 0x01, 4, 1, 2, 3]) }
    }

    @Test func enableListsHandlesThenDurationsThenEventCounts() throws {
        let e = HCICommand.LESetExtendedAdvertisingEnable(enable: true, sets: [
            .init(handle: 0, duration: 0x03E8), .init(handle: 1, maxExtendedAdvertisingEvents: 5),
        ])
        // 7.8.56: Enable, Num_Sets, Handle[i], Duration[i] (2 octets each), Max_Events[i].
        let expected: [UInt8] = [0x01, 0x02, 0x00, 0x01, 0xE8, 0x03, 0x00, 0x00, 0x00, 0x05]
        #expect(e.packet.opcode.rawValue == 0x2039)
        #expect(e.parameters == expected)
        #expect(try HCICommand.LESetExtendedAdvertisingEnable(parameters: expected) == e)
        // Num_Sets 2 with the arrays of one set.
        #expect(throws: DecodeError.self) { try HCICommand.LESetExtendedAdvertisingEnable(parameters: [0x01, 0x02, 0x00, 0xE8, 0x03, 0x00]) }
    }

    @Test func readCommandsAndTheirReturnParameters() throws {
        #expect(HCICommand.leReadMaximumAdvertisingDataLength().opcode.rawValue == 0x203A)
        #expect(HCICommand.leReadNumberOfSupportedAdvertisingSets().opcode.rawValue == 0x203B)
        #expect(HCICommand.leRemoveAdvertisingSet(handle: 3).parameters == [0x03])
        #expect(HCICommand.leSetAdvertisingSetRandomAddress(handle: 1, address: BluetoothAddress("C1:02:03:04:05:06")!).parameters
            == [0x01, 0x06, 0x05, 0x04, 0x03, 0x02, 0xC1])
        // 7.8.57: Status, Max_Advertising_Data_Length 0x0672 (1650).
        #expect(try HCIReturn.decode(HCIReturn.LEReadMaximumAdvertisingDataLength.self, from: [0x00, 0x72, 0x06]).value?.maximumLength == 1650)
        #expect(try HCIReturn.decode(HCIReturn.LEReadNumberOfSupportedAdvertisingSets.self, from: [0x00, 0x10]).value?.count == 16)
        // 7.8.53: Status, Selected_TX_Power -6 dBm.
        #expect(try HCIReturn.decode(HCIReturn.LESetExtendedAdvertisingParameters.self, from: [0x00, 0xFA]).value?.selectedTxPower == -6)
    }

    @Test func advertisingSetTerminatedDecodes() throws {
        // 7.7.65.18: Subevent 0x12, Status, Advertising_Handle, Connection_Handle, Num_Completed_Extended_Advertising_Events.
        let connected = try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x12, 0x00, 0x01, 0x40, 0x00, 0x00]))
        #expect(connected == .leAdvertisingSetTerminated(.init(advertisingHandle: 1, connectionHandle: 0x0040)))
        let timeout = try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x12, 0x3C, 0x00, 0x00, 0x00, 0x07]))
        #expect(timeout == .leAdvertisingSetTerminated(.init(status: HCIStatus(rawValue: 0x3C), advertisingHandle: 0, connectionHandle: 0, completedExtendedAdvertisingEvents: 7)))
        #expect(timeout.packet.parameters == [0x12, 0x3C, 0x00, 0x00, 0x00, 0x07])
        #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x12, 0x00, 0x01, 0x40])) }
    }

    @Test func connectionCompleteInThePeripheralRole() throws {
        // 7.7.65.1: Status 0, Handle 0x0040, Role 0x01 (Peripheral), Peer_Address_Type 0x01,
        // Peer_Address C0:00:00:00:00:01, Interval 0x0018, Latency 0, Timeout 0x0048, Clock_Accuracy 0.
        let bytes: [UInt8] = [0x01, 0x00, 0x40, 0x00, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]
        guard case .leConnectionComplete(let c) = try HCIEvent(HCIEventPacket(code: 0x3E, parameters: bytes)) else {
            Issue.record("not decoded as LE Connection Complete"); return
        }
        #expect(c.role == LinkRole.peripheral.rawValue)
        #expect(c.peer == LEAddress(BluetoothAddress("C0:00:00:00:00:01")!, type: .random))
        // 7.7.65.10: the same with the two resolvable private addresses (zero) after the peer's.
        let enhanced: [UInt8] = [0x0A, 0x00, 0x41, 0x00, 0x01, 0x00, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01] + [UInt8](repeating: 0, count: 12)
            + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]
        guard case .leEnhancedConnectionComplete(let e) = try HCIEvent(HCIEventPacket(code: 0x3E, parameters: enhanced)) else {
            Issue.record("not decoded as LE Enhanced Connection Complete"); return
        }
        #expect(e.role == 0x01 && e.handle == 0x0041 && e.peer == LEAddress(BluetoothAddress("01:02:03:04:05:06")!, type: .public))
    }
}
