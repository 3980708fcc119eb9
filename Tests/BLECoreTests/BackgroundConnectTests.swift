import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// `Central.connect(whenSeen:)`: known devices on the controller's Filter Accept List, one
/// create-connection command with Initiator_Filter_Policy 0x01 for all of them (Vol 4, Part E,
/// 7.8.12, 7.8.14 to 7.8.17), making way for direct connects, and a scan for those past the
/// list's size.
@Suite(.timeLimit(.minutes(1))) struct BackgroundConnectTests {
    static func device(_ n: UInt64) -> LEAddress { LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_00 | n), type: .random) }
    static let a = device(1), b = device(2), c = device(3)

    static func stack(listSize: UInt8 = 8) async throws -> (VirtualController, Central) {
        var options = VirtualController.Options()
        options.filterAcceptListSize = listSize
        let vc = VirtualController(options: options)
        let central = try await vc.poweredOnCentral()
        return (vc, central)
    }

    static func peripheral(_ address: LEAddress) -> SimulatedPeripheral {
        SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06])
    }

    /// HCI_LE_Add_Device_To_Filter_Accept_List parameters (7.8.16): Address_Type 0x01
    /// (random), then the address least significant octet first.
    static func addBytes(_ d: LEAddress) -> [UInt8] { [0x01] + d.address.littleEndianBytes }

    /// The commands with `opcode` received so far.
    static func received(_ vc: VirtualController, _ opcode: UInt16) -> [HCICommandPacket] {
        vc.commandsReceived.filter { $0.opcode.rawValue == opcode }
    }

    @Test("Known devices go on the Filter Accept List; one create connection with filter policy 1 connects each as it appears")
    func connectsAsTheyAppear() async throws {
        let (vc, central) = try await Self.stack()
        var links = await central.connect(whenSeen: [Self.c, Self.a, Self.b]).makeAsyncIterator()
        let create = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        // LE Read Filter Accept List Size (7.8.14) and LE Clear Filter Accept List (7.8.15), no parameters.
        #expect(Self.received(vc, 0x200F).map(\.parameters) == [[]])
        #expect(Self.received(vc, 0x2010).map(\.parameters) == [[]])
        #expect(Self.received(vc, 0x2011).map(\.parameters) == [Self.a, Self.b, Self.c].map(Self.addBytes))
        // LE Create Connection (7.8.12): LE_Scan_Interval, LE_Scan_Window (2 octets each), then
        // Initiator_Filter_Policy 0x01: the Filter Accept List.
        #expect(create.parameters[4] == 0x01)
        #expect(vc.filterAcceptList == [Self.a, Self.b, Self.c])

        vc.addPeripheral(Self.peripheral(Self.b))
        let first = try #require(try await links.next())
        #expect(first.peer == Self.b)
        #expect(await first.isConnected)
        // The list is made again without the connected device, and the attempt renewed.
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D), count: 2)
        #expect(vc.filterAcceptList == [Self.a, Self.c])
        vc.addPeripheral(Self.peripheral(Self.c))
        #expect(try await links.next()?.peer == Self.c)
        // No direct connect was ever pending: every create connection used the list.
        #expect(Self.received(vc, 0x200D).allSatisfy { $0.parameters[4] == 0x01 })
        await central.close()
    }

    @Test("A device whose link ends goes back on the list and connects again")
    func backOnTheListAfterDisconnect() async throws {
        let (vc, central) = try await Self.stack()
        vc.addPeripheral(Self.peripheral(Self.a))
        var links = await central.connect(whenSeen: [Self.a, Self.b]).makeAsyncIterator()
        let link = try #require(try await links.next())
        #expect(link.peer == Self.a)
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D), count: 2)
        #expect(vc.filterAcceptList == [Self.b])
        vc.removePeripheral(Self.a)
        try vc.disconnect(Self.a, reason: .connectionTimeout)
        // The pending attempt makes way (LE Create Connection Cancel) so that the list can change.
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D), count: 3)
        #expect(vc.filterAcceptList == [Self.a, Self.b])
        vc.addPeripheral(Self.peripheral(Self.a))
        let again = try #require(try await links.next())
        #expect(again.peer == Self.a)
        #expect(again !== link)
        await central.close()
    }

    @Test("A direct connect is served first: the background attempt is cancelled, then renewed")
    func directConnectFirst() async throws {
        let (vc, central) = try await Self.stack()
        let other = Self.device(9)
        vc.addPeripheral(Self.peripheral(other))
        let links = await central.connect(whenSeen: [Self.a])
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        let direct = try await central.connect(other)
        #expect(direct.peer == other)
        // LE Create Connection Cancel (7.8.13), then the direct attempt (filter policy 0x00), then
        // the background attempt again.
        #expect(Self.received(vc, 0x200E).count == 1)
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D), count: 3)
        #expect(Self.received(vc, 0x200D).map { $0.parameters[4] } == [0x01, 0x00, 0x01])
        _ = links
        await central.close()
    }

    @Test("Past the list's size the others are connected by a passive scan that sees them")
    func overflowGoesToTheScan() async throws {
        let (vc, central) = try await Self.stack(listSize: 2)
        var links = await central.connect(whenSeen: [Self.a, Self.b, Self.c]).makeAsyncIterator()
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        #expect(vc.filterAcceptList == [Self.a, Self.b])
        // LE Set Scan Parameters (7.8.10): LE_Scan_Type 0x00, passive.
        let scan = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200B))
        #expect(scan.parameters.first == 0x00)
        // Time moves only once the scan runs: c advertises one interval after it starts.
        try await vc.waitUntil("the scan on") { $0.isScanning }
        vc.addPeripheral(Self.peripheral(Self.c))
        await vc.advance(by: .milliseconds(200))
        let link = try #require(try await links.next())
        #expect(link.peer == Self.c)
        #expect(Self.received(vc, 0x200D).contains { $0.parameters[4] == 0x00 && Array($0.parameters[6...11]) == Self.c.address.littleEndianBytes })
        await central.close()
    }

    @Test("A list the controller refuses ends the stream with the opcode and status; nothing else is lost")
    func refusedList() async throws {
        let (vc, central) = try await Self.stack()
        vc.addPeripheral(Self.peripheral(Self.c))
        let kept = try await central.connect(Self.c)
        vc.answer(HCIOpcode(rawValue: 0x2010), with: .status(.commandDisallowed))
        var links = await central.connect(whenSeen: [Self.a]).makeAsyncIterator()
        await #expect(throws: ConnectionError.command(peer: Self.a, .commandFailed(opcode: HCIOpcode(rawValue: 0x2010), status: .commandDisallowed))) {
            _ = try await links.next()
        }
        #expect(await kept.isConnected)
        #expect(Self.received(vc, 0x200D).count == 1)
        await central.close()
    }
}
