import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// Scanning and connecting on the PHYs asked for, with the exact HCI parameters of Vol 4,
/// Part E, 7.8.64 (LE Set Extended Scan Parameters), 7.8.66 (LE Extended Create Connection)
/// and 7.8.49 (LE Set PHY), and the fallback to LE 1M and legacy commands where the
/// controller lacks them.
@Suite(.timeLimit(.minutes(1))) struct PHYSelectionTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)

    /// A central on a virtual controller with `features`, and `peer` with `peerFeatures`.
    static func stack(features: LEFeatures, peerFeatures: LEFeatures = [.leEncryption, .le2MPHY, .leCodedPHY]) async throws -> (VirtualController, Central) {
        var options = VirtualController.Options()
        options.leFeatures = features
        let vc = VirtualController(options: options)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], features: peerFeatures))
        let central = try await vc.poweredOnCentral()
        return (vc, central)
    }

    /// The parameters of the first command `opcode` the controller received, once it did.
    static func parameters(_ vc: VirtualController, _ opcode: UInt16) async throws -> [UInt8] {
        try await vc.waitForCommand(HCIOpcode(rawValue: opcode)).parameters
    }

    @Test("Scanning on LE 1M and LE Coded sets both PHYs' parameters, interleaved per PHY")
    func scanBothPHYs() async throws {
        let (vc, central) = try await Self.stack(features: [.leExtendedAdvertising, .leCodedPHY])
        let scan = Task { for try await _ in await central.scan(options: ScanOptions(phys: [.le1M, .leCoded])) {} }
        // Own_Address_Type 0x00, Scanning_Filter_Policy 0x00, Scanning_PHYs 0x05 (bits 0 and 2),
        // then per PHY Scan_Type 0x01 (active), Scan_Interval 0x0060 (60 ms), Scan_Window 0x0030 (30 ms).
        #expect(try await Self.parameters(vc, 0x2041) == [0x00, 0x00, 0x05, 0x01, 0x60, 0x00, 0x30, 0x00, 0x01, 0x60, 0x00, 0x30, 0x00])
        scan.cancel()
        await central.close()
    }

    @Test("LE Coded alone on a controller without the LE Coded PHY scans on LE 1M")
    func codedScanFallsBackTo1M() async throws {
        let (vc, central) = try await Self.stack(features: [.leExtendedAdvertising])
        let scan = Task { for try await _ in await central.scan(options: ScanOptions(mode: .passive, phys: .leCoded)) {} }
        #expect(try await Self.parameters(vc, 0x2041) == [0x00, 0x00, 0x01, 0x00, 0x60, 0x00, 0x30, 0x00])
        scan.cancel()
        await central.close()
    }

    @Test("Without extended scanning, a coded scan uses LE Set Scan Parameters")
    func codedScanOnLegacyController() async throws {
        let (vc, central) = try await Self.stack(features: [.leEncryption])
        let scan = Task { for try await _ in await central.scan(options: ScanOptions(phys: .leCoded)) {} }
        // LE_Scan_Type 0x01, interval 0x0060, window 0x0030, Own_Address_Type 0, filter policy 0.
        #expect(try await Self.parameters(vc, 0x200B) == [0x01, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00])
        #expect(vc.commandsReceived.allSatisfy { $0.opcode.rawValue != 0x2041 })
        scan.cancel()
        await central.close()
    }

    @Test("Connecting on LE Coded S=8: LE Coded initiating parameters, the link on Coded, LE Set PHY with S=8")
    func connectCoded() async throws {
        let (vc, central) = try await Self.stack(features: [.leExtendedAdvertising, .leCodedPHY, .le2MPHY])
        var request = ConnectionRequestParameters()
        request.phy = .leCoded(.s8)
        request.requestDataLengthExtension = false
        let link = try await central.connect(Self.peer, parameters: request)
        // Initiator_Filter_Policy 0, Own_Address_Type 0, Peer_Address_Type 0x01, Peer_Address
        // (LSB first), Initiating_PHYs 0x04, then for LE Coded: Scan_Interval 0x0060,
        // Scan_Window 0x0060, Connection_Interval_Min 0x0018 (30 ms), Max 0x0028 (50 ms),
        // Max_Latency 0, Supervision_Timeout 0x01F4 (5 s), Min/Max_CE_Length 0.
        #expect(try await Self.parameters(vc, 0x2043) == [0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x04,
                                                          0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00, 0x00, 0x00])
        let handle = try #require(await link.handle)
        // Connection_Handle, All_PHYs 0, TX_PHYs 0b100, RX_PHYs 0b100, PHY_Options 0x0002 (S=8).
        #expect(try await Self.parameters(vc, 0x2032) == [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00, 0x04, 0x04, 0x02, 0x00])
        await vc.settle()
        let phy = await link.phy
        #expect(phy.tx == .leCoded && phy.rx == .leCoded)
        await central.close()
    }

    @Test("Connecting on LE 2M gives LE 1M and LE 2M parameters, then LE Set PHY to 2M; the update is an event")
    func connect2M() async throws {
        let (vc, central) = try await Self.stack(features: [.leExtendedAdvertising, .le2MPHY])
        var request = ConnectionRequestParameters()
        request.requestDataLengthExtension = false
        var events = await central.connectionEvents().makeAsyncIterator()
        let link = try await central.connect(Self.peer, parameters: request)
        let create = try await Self.parameters(vc, 0x2043)
        let perPHY: [UInt8] = [0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00, 0x00, 0x00]
        #expect(create == [0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x03] + perPHY + perPHY)
        let handle = try #require(await link.handle)
        #expect(try await Self.parameters(vc, 0x2032) == [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00, 0x02, 0x02, 0x00, 0x00])
        var changed: ConnectionEvent?
        while let e = await events.next() { if case .phyChanged = e.event, e.peer == Self.peer { changed = e.event; break } }
        #expect(changed == .phyChanged(tx: .le2M, rx: .le2M))
        await central.close()
    }

    @Test("Connecting on LE 1M sends no LE Set PHY, and a coded connect without the PHY initiates on LE 1M")
    func connect1MAndCodedFallback() async throws {
        let (vc, central) = try await Self.stack(features: [.leExtendedAdvertising, .le2MPHY])
        var request = ConnectionRequestParameters()
        request.phy = .leCoded(.s2)
        request.requestDataLengthExtension = false
        let link = try await central.connect(Self.peer, parameters: request)
        let create = try await Self.parameters(vc, 0x2043)
        #expect(create.count == 26 && create[9] == 0x01)
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016))  // LE Read Remote Features
        await vc.settle()
        #expect(vc.commandsReceived.allSatisfy { $0.opcode.rawValue != 0x2032 })
        let phy = await link.phy
        #expect(phy.tx == .le1M && phy.rx == .le1M)
        await central.close()
    }
}
