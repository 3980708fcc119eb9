import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Event decoders against parameter bytes written by hand from the tables of Core Spec 5.4
/// Vol 4, Part E, 7.7 (LE Meta subevents in 7.7.65; array parameters interleaved per entry).
@Suite struct HCIEventTests {
    static let a: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]   // C0:11:22:33:44:55
    static let b: [UInt8] = [0x66, 0x55, 0x44, 0x33, 0x22, 0x11]   // 11:22:33:44:55:66
    static let addrA = BluetoothAddress("C0:11:22:33:44:55")!
    static let addrB = BluetoothAddress("11:22:33:44:55:66")!

    /// (event code, parameters, expected decoded event)
    static var fixtures: [(UInt8, [UInt8], HCIEvent)] {
        [
            (0x05, [0x00, 0x40, 0x00, 0x13],
             .disconnectionComplete(.init(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection))),
            (0x08, [0x00, 0x40, 0x00, 0x01], .encryptionChange(.init(handle: 0x0040, encryptionEnabled: 1))),
            (0x59, [0x00, 0x40, 0x00, 0x01, 0x10], .encryptionChange(.init(handle: 0x0040, encryptionEnabled: 1, keySize: 16))),
            (0x0C, [0x00, 0x40, 0x00, 0x0B, 0x0F, 0x00, 0x34, 0x12],
             .readRemoteVersionInformationComplete(.init(handle: 0x0040, version: HCIVersion(rawValue: 0x0B), companyIdentifier: 0x000F, subversion: 0x1234))),
            (0x0F, [0x00, 0x01, 0x0D, 0x20], .commandStatus(.init(status: .success, numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x200D)))),
            (0x10, [0x05], .hardwareError(code: 0x05)),
            (0x13, [0x02, 0x40, 0x00, 0x01, 0x00, 0x41, 0x00, 0x02, 0x00],
             .numberOfCompletedPackets([.init(handle: 0x0040, count: 1), .init(handle: 0x0041, count: 2)])),
            (0x1A, [0x01], .dataBufferOverflow(linkType: 0x01)),
            (0x30, [0x00, 0x40, 0x00], .encryptionKeyRefreshComplete(status: .success, handle: 0x0040)),
            // 7.7.65.1: Status, Handle, Role, Peer_Address_Type, Peer_Address, Interval, Latency, Timeout, Clock_Accuracy
            (0x3E, [0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + a + [0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x05],
             .leConnectionComplete(.init(handle: 0x0040, role: 0, peerAddressType: 1, peerAddress: addrA,
                                         connectionInterval: 0x28, supervisionTimeout: 0x01F4, centralClockAccuracy: 5))),
            // 7.7.65.2: two reports, each Event_Type, Address_Type, Address, Data_Length, Data, RSSI
            (0x3E, [0x02, 0x02, 0x00, 0x01] + a + [0x03, 0x02, 0x01, 0x06, 0xC4, 0x04, 0x00] + b + [0x00, 0xB0],
             .leAdvertisingReport([
                .init(eventType: 0, addressType: 1, address: addrA, data: [0x02, 0x01, 0x06], rssi: -60),
                .init(eventType: 4, addressType: 0, address: addrB, data: [], rssi: -80),
             ])),
            (0x3E, [0x03, 0x00, 0x40, 0x00, 0x18, 0x00, 0x02, 0x00, 0x48, 0x00],
             .leConnectionUpdateComplete(.init(handle: 0x0040, connectionInterval: 0x18, peripheralLatency: 2, supervisionTimeout: 0x48))),
            // LE features: bit 0 LE Encryption, bit 8 LE 2M PHY
            (0x3E, [0x04, 0x00, 0x40, 0x00, 0x01, 0x01, 0, 0, 0, 0, 0, 0],
             .leReadRemoteFeaturesComplete(.init(handle: 0x0040, features: [.leEncryption, .le2MPHY]))),
            (0x3E, [0x05, 0x40, 0x00, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x34, 0x12],
             .leLongTermKeyRequest(.init(handle: 0x0040, random: 0x0102_0304_0506_0708, ediv: 0x1234))),
            (0x3E, [0x06, 0x40, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00],
             .leRemoteConnectionParameterRequest(.init(handle: 0x0040, intervalMin: 6, intervalMax: 12, maxLatency: 0, timeout: 200))),
            (0x3E, [0x07, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08, 0x1B, 0x00, 0x48, 0x01],
             .leDataLengthChange(.init(handle: 0x0040, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 27, maxRxTime: 328))),
            // 7.7.65.10 [v1]: adds Local_RPA and Peer_RPA after Peer_Address
            (0x3E, [0x0A, 0x00, 0x40, 0x00, 0x01, 0x03] + a + b + [0, 0, 0, 0, 0, 0] + [0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00],
             .leEnhancedConnectionComplete(.init(handle: 0x0040, role: 1, peerAddressType: 3, peerAddress: addrA,
                                                 localResolvablePrivateAddress: addrB, connectionInterval: 0x28, supervisionTimeout: 0x1F4))),
            // [v2]: adds Advertising_Handle and Sync_Handle
            (0x3E, [0x29, 0x00, 0x40, 0x00, 0x00, 0x01] + a + [0, 0, 0, 0, 0, 0] + b + [0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0xFF, 0xFF, 0xFF],
             .leEnhancedConnectionComplete(.init(handle: 0x0040, peerAddressType: 1, peerAddress: addrA,
                                                 peerResolvablePrivateAddress: addrB, connectionInterval: 0x28, supervisionTimeout: 0x1F4,
                                                 advertisingHandle: 0xFF, syncHandle: 0xFFFF))),
            // 7.7.65.11: Event_Type, Address_Type, Address, Direct_Address_Type, Direct_Address, RSSI
            (0x3E, [0x0B, 0x01, 0x01, 0x01] + a + [0x02] + b + [0xC4],
             .leDirectedAdvertisingReport([.init(eventType: 1, addressType: 1, address: addrA, directAddressType: 2, directAddress: addrB, rssi: -60)])),
            (0x3E, [0x0C, 0x00, 0x40, 0x00, 0x02, 0x03], .lePHYUpdateComplete(.init(handle: 0x0040, txPHY: 2, rxPHY: 3))),
            // 7.7.65.13: two reports. Event_Type(2), Address_Type, Address, Primary_PHY, Secondary_PHY,
            // Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval(2), Direct_Address_Type,
            // Direct_Address, Data_Length, Data.
            (0x3E, [0x0D, 0x02,
                    0x13, 0x00, 0x01] + a + [0x01, 0x00, 0xFF, 0x7F, 0xC4, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x03, 0x02, 0x01, 0x06]
                 + [0x25, 0x00, 0x00] + b + [0x03, 0x02, 0x05, 0xF6, 0xB0, 0x10, 0x00, 0x01] + a + [0x01, 0xAA],
             .leExtendedAdvertisingReport([
                .init(eventType: [.connectable, .scannable, .legacy], addressType: 1, address: addrA, primaryPHY: 1, secondaryPHY: 0,
                      advertisingSID: 0xFF, txPower: 127, rssi: -60, data: [0x02, 0x01, 0x06]),
                .init(eventType: ExtendedAdvertisingEventType([.connectable, .directed], dataStatus: .incompleteMoreToCome),
                      addressType: 0, address: addrB, primaryPHY: 3, secondaryPHY: 2, advertisingSID: 5, txPower: -10, rssi: -80,
                      periodicAdvertisingInterval: 0x0010, directAddressType: 1, directAddress: addrA, data: [0xAA]),
             ])),
            (0x3E, [0x14, 0x40, 0x00, 0x01], .leChannelSelectionAlgorithm(handle: 0x0040, algorithm: 1)),
        ]
    }

    @Test func decodeAndRoundTrip() throws {
        for (code, params, expected) in Self.fixtures {
            let packet = HCIEventPacket(code: code, parameters: params)
            let event = try HCIEvent(packet)
            #expect(event == expected, "event 0x\(String(code, radix: 16)) \(params.first ?? 0)")
            #expect(event.packet == packet)
            #expect(expected.packet == packet)
        }
    }

    @Test func commandCompleteKeepsReturnParametersRaw() throws {
        // Command Complete for HCI_Reset: Num_HCI_Command_Packets 1, opcode 0x0C03, Status 0.
        let event = try HCIEvent(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x03, 0x0C, 0x00]))
        #expect(event == .commandComplete(.init(numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x0C03), returnParameters: [0x00])))
        guard case .commandComplete(let c) = event else { return }
        #expect(c.status == .success)
        // A NOP Command Complete (opcode 0x0000) has no return parameters.
        let nop = try HCIEvent(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x00, 0x00]))
        #expect(nop.packet.parameters == [0x01, 0x00, 0x00])
        for n in 0..<3 {
            #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x0E, parameters: Array([0x01, 0x03, 0x0C].prefix(n)))) }
        }
    }

    @Test func unknownEventsStayRaw() throws {
        let vendor = HCIEventPacket(code: 0xFF, parameters: [0x01, 0x02, 0x03])
        #expect(try HCIEvent(vendor) == .unknown(code: 0xFF, parameters: [0x01, 0x02, 0x03]))
        #expect(try HCIEvent(vendor).packet == vendor)
        let le = HCIEventPacket(code: 0x3E, parameters: [0x22, 0x09, 0x08])
        #expect(try HCIEvent(le) == .leUnknown(subevent: 0x22, parameters: [0x09, 0x08]))
        #expect(try HCIEvent(le).packet == le)
    }

    @Test func everyTruncationAndTrailingByteIsATypedError() {
        for (code, params, _) in Self.fixtures {
            for n in 0..<params.count {
                #expect(throws: DecodeError.self, "0x\(String(code, radix: 16)) cut to \(n)") {
                    try HCIEvent(HCIEventPacket(code: code, parameters: Array(params.prefix(n))))
                }
            }
            #expect(throws: DecodeError.self, "0x\(String(code, radix: 16)) with a trailing byte") {
                try HCIEvent(HCIEventPacket(code: code, parameters: params + [0x00]))
            }
        }
    }

    @Test func hostileCountsAreErrorsNotAllocations() {
        // Num_Reports 255 with the bytes of one report; Num_Handles 255 with one entry.
        let one: [UInt8] = [0x00, 0x01] + Self.a + [0x00, 0xC4]
        #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x02, 0xFF] + one)) }
        #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x0D, 0xFF] + one)) }
        #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x0B, 0xFF] + one)) }
        #expect(throws: DecodeError.self) { try HCIEvent(HCIEventPacket(code: 0x13, parameters: [0xFF, 0x40, 0x00, 0x01, 0x00])) }
        // A Data_Length that runs past the end.
        #expect(throws: DecodeError.self) {
            try HCIEvent(HCIEventPacket(code: 0x3E, parameters: [0x02, 0x01, 0x00, 0x01] + Self.a + [0xF0, 0x01, 0xC4]))
        }
    }

    @Test func extendedEventTypeBits() {
        let t = ExtendedAdvertisingEventType(rawValue: 0x0045)   // connectable, directed, truncated
        #expect(t.contains(.connectable) && t.contains(.directed) && !t.contains(.scannable))
        #expect(t.dataStatus == .incompleteTruncated)
        #expect(ExtendedAdvertisingEventType(rawValue: 0x0020).dataStatus == .incompleteMoreToCome)
        #expect(ExtendedAdvertisingEventType(rawValue: 0x0013).description == "connectable, scannable, legacy")
        #expect(ExtendedAdvertisingEventType(rawValue: 0x0018).description == "scan response, legacy")
    }
}
