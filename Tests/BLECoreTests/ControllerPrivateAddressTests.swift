import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Resolvable private addresses made by the controller (LL Privacy, Vol 6, Part B, 6.4): with
/// `OwnAddress.resolvablePrivate` and a resolving list that holds the local IRK, LE Set Scan
/// Parameters (Vol 4, Part E, 7.8.10) and LE Create Connection (7.8.12) carry
/// Own_Address_Type 0x03, and the link's own address is the Local_Resolvable_Private_Address
/// of LE Enhanced Connection Complete (7.7.65.10).
@Suite(.timeLimit(.minutes(1)))
struct ControllerPrivateAddressTests {
    static let peer = VC.peer
    /// The ah test vector's address (Vol 3, Part H, Appendix D.7): the host's own RPA.
    static let hostAddress = BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AA)
    /// The address the controller made for the link (two most significant bits 0b01).
    static let controllerAddress = BluetoothAddress(rawValue: 0x5B_0A_0B_0C_0D_0E)
    static let entry = ResolvingListEntry(identity: peer, peerIRK: 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B,
                                          localIRK: 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF)

    /// LE Create Connection answered with Command Status (7.7.15), then LE Enhanced Connection
    /// Complete v1 on handle 0x0040 as central with `controllerAddress` as the local RPA.
    static let connectAnswer = CommandAnswer.events { _ in
        let peerBytes: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]
        let local: [UInt8] = [0x0E, 0x0D, 0x0C, 0x0B, 0x0A, 0x5B]
        // Subevent 0x0A: Status, Connection_Handle, Role, Peer_Address_Type, Peer_Address,
        // Local_Resolvable_Private_Address, Peer_Resolvable_Private_Address, Connection_Interval,
        // Peripheral_Latency, Supervision_Timeout, Central_Clock_Accuracy.
        let complete: [UInt8] = [0x0A, 0x00, 0x40, 0x00, 0x00, 0x01] + peerBytes + local + [UInt8](repeating: 0, count: 6)
            + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]
        return [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x0D, 0x20]), HCIEventPacket(code: 0x3E, parameters: complete)]
    }

    static func stack() async throws -> (VirtualController, Central) {
        let vc = ResolvingListTests.controller(listSize: 8)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06]))
        let central = try await vc.poweredOnCentral()
        try await central.setOwnAddress(.resolvablePrivate(rotation: .seconds(900)) { hostAddress })
        return (vc, central)
    }

    @Test func aResolvingListWithTheLocalIRKMakesScansAndConnectionsUseType0x03() async throws {
        let (vc, central) = try await Self.stack()
        #expect(await central.ownAddressType == 0x01)
        try await central.loadResolvingList([Self.entry])
        #expect(await central.ownAddressType == 0x03)
        let scan = Task { for try await _ in await central.scan() {} }
        // LE_Scan_Type, interval, window, Own_Address_Type 0x03, filter policy.
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x200B)).parameters == [0x01, 0x60, 0x00, 0x30, 0x00, 0x03, 0x00])
        scan.cancel()
        vc.answer(HCIOpcode(rawValue: 0x200D), with: Self.connectAnswer, times: 1)
        var request = ConnectionRequestParameters()
        request.requestDataLengthExtension = false
        request.phy = .le1M
        let link = try await central.connect(Self.peer, parameters: request)
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D)).parameters[12] == 0x03)
        #expect(await link.localAddress == LEAddress(Self.controllerAddress, type: .random))
        // The link exists only in these events: HCI Disconnect is answered the same way, with
        // Command Status and Disconnection Complete (7.7.5, reason 0x16).
        vc.answer(HCIOpcode(rawValue: 0x0406), with: .events({ _ in
            [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x06, 0x04]), HCIEventPacket(code: 0x05, parameters: [0x00, 0x40, 0x00, 0x16])]
        }), times: 1)
        await central.close()
    }

    @Test func aResolvingListWithoutTheLocalIRKKeepsType0x01AndTheHostsAddress() async throws {
        let (vc, central) = try await Self.stack()
        var entry = Self.entry
        entry.localIRK = nil
        try await central.loadResolvingList([entry])
        #expect(await central.ownAddressType == 0x01)
        var request = ConnectionRequestParameters()
        request.requestDataLengthExtension = false
        request.phy = .le1M
        let link = try await central.connect(Self.peer, parameters: request)
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D)).parameters[12] == 0x01)
        #expect(await link.localAddress == LEAddress(Self.hostAddress, type: .random))
        await central.close()
    }
}
