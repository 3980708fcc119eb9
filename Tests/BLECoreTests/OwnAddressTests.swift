import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// `Central.setOwnAddress`: LE Set Random Address (Vol 4, Part E, 7.8.4) with nothing scanning
/// or initiating, Own_Address_Type 0x01 in the scan and create-connection commands (7.8.10,
/// 7.8.12), resolvable private addresses renewed every rotation, and the address again after
/// a power-on.
@Suite(.timeLimit(.minutes(1))) struct OwnAddressTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    /// Static random: the two most significant bits 1 (Vol 6, Part B, 1.3.2.1).
    static let staticAddress = BluetoothAddress(rawValue: 0xC1_22_33_44_55_66)

    static func stack() async throws -> (VirtualController, Central) {
        let vc = VirtualController()
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06]))
        let central = try await vc.poweredOnCentral()
        return (vc, central)
    }

    static func received(_ vc: VirtualController, _ opcode: UInt16) -> [HCICommandPacket] {
        vc.commandsReceived.filter { $0.opcode.rawValue == opcode }
    }

    @Test("A static random address is set, then scans and connects use Own_Address_Type 0x01")
    func staticRandom() async throws {
        let (vc, central) = try await Self.stack()
        try await central.setOwnAddress(.staticRandom(Self.staticAddress))
        // LE Set Random Address: Random_Address least significant octet first.
        #expect(Self.received(vc, 0x2005).map(\.parameters) == [[0x66, 0x55, 0x44, 0x33, 0x22, 0xC1]])
        #expect(await central.currentRandomAddress == Self.staticAddress)
        let scan = Task { for try await _ in await central.scan() {} }
        // LE Set Scan Parameters: LE_Scan_Type, interval, window, then Own_Address_Type 0x01.
        let parameters = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200B)).parameters
        #expect(parameters == [0x01, 0x60, 0x00, 0x30, 0x00, 0x01, 0x00])
        scan.cancel()
        var request = ConnectionRequestParameters()
        request.requestDataLengthExtension = false
        request.phy = .le1M
        _ = try await central.connect(Self.peer, parameters: request)
        // LE Create Connection: interval, window, filter policy, peer type, peer address, then Own_Address_Type.
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D)).parameters[12] == 0x01)
        await central.close()
    }

    @Test("An address without the static bits is refused, naming it; nothing is sent")
    func notStatic() async throws {
        let (vc, central) = try await Self.stack()
        let bad = BluetoothAddress(rawValue: 0x41_22_33_44_55_66)
        await #expect(throws: OwnAddressError.notStaticRandom(bad)) { try await central.setOwnAddress(.staticRandom(bad)) }
        #expect(Self.received(vc, 0x2005).isEmpty)
        #expect(await central.ownAddressType == 0x00)
        await central.close()
    }

    @Test("Resolvable private addresses are renewed every rotation, the scan stopped around each change")
    func rotation() async throws {
        let (vc, central) = try await Self.stack()
        let addresses = [BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AA), BluetoothAddress(rawValue: 0x4A_11_22_33_44_55)]
        let counter = Counter()
        try await central.setOwnAddress(.resolvablePrivate(rotation: .seconds(900)) { addresses[counter.next() % 2] })
        let scan = vc.task { for try await _ in await central.scan() {} }
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200C))
        await vc.advance(by: .seconds(900))
        let second = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2005), count: 2)
        #expect(second.parameters == [0x55, 0x44, 0x33, 0x22, 0x11, 0x4A])
        // The scan was stopped before the change and started again after it.
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200C), count: 3)
        let order = vc.commandsReceived.map(\.opcode.rawValue).filter { [0x2005, 0x200C].contains($0) }
        #expect(order == [0x2005, 0x200C, 0x200C, 0x2005, 0x200C])
        #expect(Self.received(vc, 0x200C).map(\.parameters) == [[0x01, 0x00], [0x00, 0x00], [0x01, 0x00]])
        scan.cancel()
        await central.close()
    }

    @Test("After a power-on the random address is set again before the scan runs")
    func restoredAfterPowerOn() async throws {
        let (vc, central) = try await Self.stack()
        try await central.setOwnAddress(.staticRandom(Self.staticAddress))
        try await central.powerOn()
        #expect(Self.received(vc, 0x2005).count == 2)
        #expect(await central.ownAddressType == 0x01)
        await central.close()
    }
}

/// Counts calls from the address generator (it runs on the adapter queue).
final class Counter: @unchecked Sendable { // only touched from the adapter queue, one call at a time
    private var value = -1
    func next() -> Int { value += 1; return value }
}
