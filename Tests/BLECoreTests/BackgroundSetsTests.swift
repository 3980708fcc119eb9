import Testing
@testable import BLECore
@testable import BLETestSupport
import BLEWire

/// Several `Central.connect(whenSeen:)` sets over one Filter Accept List (Vol 4, Part E, 7.8.14
/// to 7.8.17): the list holds their union, each stream gets its own devices' links, ending one
/// leaves the others; and on a controller that cannot scan and initiate at once, background
/// attempts and the scan take turns within `BackgroundScanWindows`.
@Suite(.timeLimit(.minutes(1))) struct BackgroundSetsTests {
    static let a = BackgroundConnectTests.device(1), b = BackgroundConnectTests.device(2), c = BackgroundConnectTests.device(3)

    /// LE Create Connection (0x200D), LE Create Connection Cancel (0x200E), LE Set Scan Enable
    /// (0x200C) with its LE_Scan_Enable octet: the order the controller got them in.
    static func connectAndScanOrder(_ vc: VirtualController) -> [String] {
        vc.commandsReceived.compactMap { command in
            switch command.opcode.rawValue {
            case 0x200C: return command.parameters.first == 0x01 ? "scan on" : "scan off"
            case 0x200D: return "create"
            case 0x200E: return "cancel"
            default: return nil
            }
        }
    }

    @Test("Two sets share the list: the union goes on it, each stream gets its own devices, ending one leaves the other")
    func twoSetsOverlapping() async throws {
        let (vc, central) = try await BackgroundConnectTests.stack()
        let create = HCIOpcode(rawValue: 0x200D)
        let first = await central.connect(whenSeen: [Self.a, Self.b])
        _ = try await vc.waitForCommand(create)
        #expect(vc.filterAcceptList == [Self.a, Self.b])

        // The second set adds c: the attempt makes way (LE Create Connection Cancel), the list
        // is made again with the union (b counted once) and the attempt renewed.
        var second = await central.connect(whenSeen: [Self.b, Self.c]).makeAsyncIterator()
        _ = try await vc.waitForCommand(create, count: 2)
        #expect(BackgroundConnectTests.received(vc, 0x200E).count == 1)
        #expect(vc.filterAcceptList == [Self.a, Self.b, Self.c])

        // c is only the second set's.
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.c))
        #expect(try await second.next()?.peer == Self.c)
        _ = try await vc.waitForCommand(create, count: 3)
        #expect(vc.filterAcceptList == [Self.a, Self.b])

        // The first set ends: a, which only it wanted, leaves the list; b stays for the second.
        let firstSeen = Task { () -> [LEAddress] in
            var seen: [LEAddress] = []
            do { for try await link in first { seen.append(link.peer) } } catch {}
            return seen
        }
        firstSeen.cancel()
        #expect(await firstSeen.value == [])
        _ = try await vc.waitForCommand(create, count: 4)
        #expect(vc.filterAcceptList == [Self.b])
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.b))
        #expect(try await second.next()?.peer == Self.b)

        // HCI_LE_Add_Device_To_Filter_Accept_List (7.8.16) for each list made: {a, b}, the
        // union {a, b, c}, {a, b} once c connected, then {b}. Every create connection used the
        // list (Initiator_Filter_Policy 0x01).
        #expect(BackgroundConnectTests.received(vc, 0x2011).map(\.parameters)
            == [Self.a, Self.b, Self.a, Self.b, Self.c, Self.a, Self.b, Self.b].map(BackgroundConnectTests.addBytes))
        #expect(BackgroundConnectTests.received(vc, 0x2010).count == 4)
        #expect(BackgroundConnectTests.received(vc, 0x200D).allSatisfy { $0.parameters[4] == 0x01 })
        await central.close()
    }

    @Test("A device in two sets goes to the older one; the newer set's other devices still come")
    func overlappingDeviceGoesToTheOlderSet() async throws {
        let (vc, central) = try await BackgroundConnectTests.stack()
        var older = await central.connect(whenSeen: [Self.a, Self.b]).makeAsyncIterator()
        var newer = await central.connect(whenSeen: [Self.a, Self.c]).makeAsyncIterator()
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        try await vc.waitUntil("the union on the list") { $0.filterAcceptList == [Self.a, Self.b, Self.c] }
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.a))
        #expect(try await older.next()?.peer == Self.a)
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.c))
        #expect(try await newer.next()?.peer == Self.c)
        await central.close()
        // Closing the central ends every set.
        #expect(try await older.next() == nil)
        #expect(try await newer.next() == nil)
    }

    @Test("Past the list's size the union's other devices go to the scan; the link goes to the set that wants it")
    func unionPastTheListSize() async throws {
        let (vc, central) = try await BackgroundConnectTests.stack(listSize: 2)
        let first = await central.connect(whenSeen: [Self.a, Self.b])
        var second = await central.connect(whenSeen: [Self.c]).makeAsyncIterator()
        try await vc.waitUntil("the first two on the list") { $0.filterAcceptList == [Self.a, Self.b] }
        // LE Set Scan Parameters (7.8.10) with LE_Scan_Type 0x00: the passive scan for c.
        let scan = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200B))
        #expect(scan.parameters.first == 0x00)
        // Time moves only once the scan runs: c advertises one interval after it starts.
        try await vc.waitUntil("the scan on") { $0.isScanning }
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.c))
        await vc.advance(by: .milliseconds(200))
        #expect(try await second.next()?.peer == Self.c)
        // A direct connect to c (Initiator_Filter_Policy 0x00, its address at octets 6 to 11).
        #expect(BackgroundConnectTests.received(vc, 0x200D).contains {
            $0.parameters[4] == 0x00 && Array($0.parameters[6...11]) == Self.c.address.littleEndianBytes
        })
        _ = first
        await central.close()
    }

    /// A beacon advertising every 500 ms (not connectable).
    static let beacon = BackgroundConnectTests.device(9)

    /// A controller that cannot scan and initiate at once, with the beacon, and a central on
    /// it with windows of 3 s initiating and 2 s scanning.
    static func controllerThatTakesTurns() async throws -> (VirtualController, Central) {
        var controllerOptions = VirtualController.Options()
        controllerOptions.initiatesWhileScanning = false
        let vc = VirtualController(options: controllerOptions)
        let central = try await vc.poweredOnCentral { $0.backgroundScanWindows = BackgroundScanWindows(initiating: .seconds(3), scanning: .seconds(2)) }
        vc.addPeripheral(SimulatedPeripheral(address: beacon, advertisingData: [0x02, 0x01, 0x06], isConnectable: false,
                                             advertisingInterval: .milliseconds(500)))
        return (vc, central)
    }

    @Test("A controller that cannot scan and initiate at once: attempts and the scan take turns, advertisements keep coming")
    func takesTurnsWithTheScan() async throws {
        let (vc, central) = try await Self.controllerThatTakesTurns()
        // A scan that reports every advertisement of the beacon.
        let scan = await central.scan(options: ScanOptions(mode: .passive, allowDuplicates: true))
        let scanning = Task { do { for try await _ in scan {} } catch {} }
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200C))
        var links = await central.connect(whenSeen: [Self.a]).makeAsyncIterator()
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200D), count: 2)

        let create = HCIOpcode(rawValue: 0x200D), cancel = HCIOpcode(rawValue: 0x200E), scanEnable = HCIOpcode(rawValue: 0x200C)
        // LE Advertising Reports (LE Meta 0x3E, subevent 0x02) the controller sent the host.
        let reports = { vc.eventsSent.filter { $0.code == 0x3E && $0.parameters.first == 0x02 }.count }
        for cycle in 0..<3 {
            // The attempt waits for its completion (its time runs from here).
            try await central.connectWaiters.waitForCount("the attempt waiting") { $0 == 1 }
            // The attempt keeps the scan stopped for the initiating window, and no longer.
            await vc.advance(by: .milliseconds(2999))
            #expect(!vc.isScanning)
            #expect(BackgroundConnectTests.received(vc, 0x200E).count == cycle)
            await vc.advance(by: .milliseconds(1))
            _ = try await vc.waitForCommand(cancel, count: cycle + 1)
            _ = try await vc.waitForCommand(scanEnable, count: 3 + 2 * cycle)
            // Then the scan runs its window, and the beacon's advertisements (every 500 ms)
            // reach the host, before the next attempt.
            let before = reports()
            await vc.advance(by: .milliseconds(1999))
            #expect(vc.isScanning)
            #expect(reports() - before == 3)
            #expect(BackgroundConnectTests.received(vc, 0x200D).count == 2 + 2 * cycle)
            await vc.advance(by: .milliseconds(1))
            _ = try await vc.waitForCommand(create, count: 4 + 2 * cycle)
        }
        // Each create is refused (Command Disallowed) while the scan runs: the scan stops, the
        // attempt runs 3 s, then the scan runs 2 s, and so on.
        #expect(Array(Self.connectAndScanOrder(vc).prefix(14)) == [
            "scan on", "create", "scan off", "create",
            "cancel", "scan on", "create", "scan off", "create",
            "cancel", "scan on", "create", "scan off", "create",
        ])

        // A known device that appears during an attempt is connected by it.
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.a))
        #expect(try await links.next()?.peer == Self.a)
        scanning.cancel()
        await central.close()
    }
    @Test("On such a controller a scan started while a background attempt is pending: the attempt makes way and the scan runs")
    func scanStartedDuringAnAttemptRuns() async throws {
        let (vc, central) = try await Self.controllerThatTakesTurns()
        let beacon = Self.beacon
        let create = HCIOpcode(rawValue: 0x200D), cancel = HCIOpcode(rawValue: 0x200E), scanEnable = HCIOpcode(rawValue: 0x200C)
        // Nothing scans: the background attempt has its whole lifetime.
        var links = await central.connect(whenSeen: [Self.a]).makeAsyncIterator()
        _ = try await vc.waitForCommand(create)
        try await central.connectWaiters.waitForCount("the attempt waiting") { $0 == 1 }

        // A scan now: the controller refuses it (twice: once more after a stop), the attempt
        // is cancelled, and the scan starts; the beacon is reported.
        let scan = await central.scan(options: ScanOptions(mode: .passive, allowDuplicates: true))
        var events = scan.makeAsyncIterator()
        _ = try await vc.waitForCommand(cancel)
        _ = try await vc.waitForCommand(scanEnable, count: 4)
        #expect(vc.isScanning)
        await vc.advance(by: .milliseconds(500))
        guard case .discovered(let found)? = try await events.next() else {
            Issue.record("no advertisement reached the scan")
            return
        }
        #expect(found.address == beacon)
        // The attempt comes back after the scan's window, and from then on they take turns.
        #expect(BackgroundConnectTests.received(vc, 0x200D).count == 1)
        await vc.advance(by: .milliseconds(1500))
        _ = try await vc.waitForCommand(create, count: 2)
        #expect(Array(Self.connectAndScanOrder(vc).prefix(7)) == [
            "create", "scan on", "scan off", "scan on", "cancel", "scan on", "create",
        ])
        vc.addPeripheral(BackgroundConnectTests.peripheral(Self.a))
        #expect(try await links.next()?.peer == Self.a)
        await central.close()
    }
}
