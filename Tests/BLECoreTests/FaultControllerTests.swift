import Testing
import BLETestSupport
@testable import BLECore
@testable import BLETransport
import BLEWire

/// A controller that stops answering, then a transport that is cut, on the in-process
/// virtual controller in manual time (no sleeping): typed errors naming the opcode, the
/// adapter state, and nothing left pending in the central or the host.
@Suite(.timeLimit(.minutes(1)))
struct FaultControllerTests {
    /// HCI_Read_RSSI (Vol 4, Part E, 7.5.4): OGF 0x05, OCF 0x0005.
    static let readRSSI = HCIOpcode(rawValue: 0x1405)
    /// HCI_LE_Create_Connection (Vol 4, Part E, 7.8.12): OGF 0x08, OCF 0x000D.
    static let leCreateConnection = HCIOpcode(rawValue: 0x200D)

    static func stack() async throws -> (VirtualController, FaultInjectingTransport, Central) {
        let vc = VirtualController()
        vc.addPeripheral(SimulatedPeripheral(address: VC.peer, advertisingData: [0x02, 0x01, 0x06], attServer: EchoATTServer()))
        let faulty = FaultInjectingTransport(wrapping: vc.makeTransport(), scheduler: vc.clock)
        let central = Central(transport: faulty, options: vc.centralOptions())
        try await central.powerOn()
        return (vc, faulty, central)
    }

    /// Connects, then waits until the link set-up that follows (LE Read Remote Features, run
    /// in the background) is over, so no set-up command races the faults a test injects.
    static func connect(_ central: Central, _ vc: VirtualController, reconnect: ReconnectPolicy = .never) async throws -> Connection {
        var parameters = ConnectionRequestParameters()
        parameters.requestDataLengthExtension = false
        parameters.request2MPHY = false
        let link = try await central.connect(VC.peer, reconnect: reconnect, parameters: parameters)
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016)) // HCI_LE_Read_Remote_Features
        await vc.settle()
        return link
    }

    static func rssi(_ link: Connection) -> Task<Result<Int8, ConnectionError>, Never> {
        Task { () async -> Result<Int8, ConnectionError> in
            do throws(ConnectionError) { return .success(try await link.readRSSI()) } catch { return .failure(error) }
        }
    }

    @Test func unansweredCommandTimesOutNamingItsOpcode() async throws {
        let (vc, _, central) = try await Self.stack()
        let link = try await Self.connect(central, vc)
        vc.answer(Self.readRSSI, with: .none, times: 1)
        let pending = Self.rssi(link)
        try await vc.waitForCommand(Self.readRSSI)
        await vc.advance(by: .milliseconds(1999))
        await vc.advance(by: .milliseconds(1))
        let result = await pending.value
        #expect(result == .failure(.command(peer: VC.peer, .commandTimeout(opcode: Self.readRSSI, milliseconds: 2000))))
        if case .failure(let error) = result { #expect("\(error)".contains("0x1405")) }
        // One unanswered command does not wedge the host: the next one is answered.
        #expect(try await link.readRSSI() == Self.rssiOf(vc))
        #expect(await central.state == .poweredOn)
    }

    static func rssiOf(_ vc: VirtualController) -> Int8 {
        // SimulatedPeripheral's default RSSI, reported by HCI_Read_RSSI.
        SimulatedPeripheral(address: VC.peer).rssi
    }

    @Test func silentControllerThenCutTransportFailsAllPendingWork() async throws {
        let (vc, faulty, central) = try await Self.stack()
        let link = try await Self.connect(central, vc)
        var linkEvents = await link.events().makeAsyncIterator()
        var states = await central.stateEvents().makeAsyncIterator()
        #expect(await states.next() == .poweredOn)

        // The controller goes silent: no command reaches it any more.
        faulty.setPlan(.script([FaultRule(PacketMatch(direction: .toController, types: [.command]), .drop)]))
        let first = Self.rssi(link)
        #expect(await faulty.waitForFaults(count: 1)) // the command met its drop
        await vc.advance(by: .seconds(2))
        #expect(await first.value == .failure(.command(peer: VC.peer, .commandTimeout(opcode: Self.readRSSI, milliseconds: 2000))))

        // Work pending when the stream is cut: a command in flight, a connection attempt.
        let second = Self.rssi(link)
        #expect(await faulty.waitForFaults(count: 2))
        let absent = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_99), type: .random)
        let connecting = Task { () async -> ConnectionError? in
            do throws(ConnectionError) { _ = try await central.connect(absent); return nil } catch { return error }
        }
        try await central.waitUntilCommandWaits()
        #expect(await central.host.sentCommands.count == 1) // Read RSSI holds the one credit
        #expect(await central.host.waitingCommands.count == 1) // LE Create Connection waits behind it
        faulty.cut(reason: "controller unplugged")
        await vc.settle()

        #expect(await states.next() == .transportLost)
        #expect(await central.state == .transportLost)
        let why = "\(TransportError.lost(endpoint: faulty.name, reason: "controller unplugged"))"
        #expect(await second.value == .failure(.command(peer: VC.peer, .transportLost(why))))
        #expect(await connecting.value == .command(peer: absent, .transportLost(why)))
        var ending: ConnectionEvent?
        while let e = await linkEvents.next() {
            if case .disconnected = e { ending = e; break }
        }
        #expect(ending == .disconnected(reason: .connectionTerminatedByLocalHost, willReconnect: false))
        #expect(await !link.isConnected)
        // Later calls fail at once with the same typed error.
        await #expect(throws: ConnectionError.self) { try await central.connect(VC.peer) }

        // Nothing is left behind in the central or the host.
        #expect(await central.host.sentCommands.isEmpty)
        #expect(await central.host.waitingCommands.isEmpty)
        #expect(await central.host.linkCount == 0)
        #expect(await central.host.readyLinks.isEmpty)
        #expect(await central.connectionsByHandle.isEmpty)
        #expect(await central.connectionsByPeer.isEmpty)
        #expect(await central.pendingConnect == nil)
        #expect(await link.linkState == .closed(.transportLost(why)))
        #expect(faulty.delayedPacketCount == 0)
    }

    @Test func transportLossEndsEveryLinkWithoutReconnecting() async throws {
        let (vc, faulty, central) = try await Self.stack()
        let policy = ReconnectPolicy.always(backoff: .exponential(initial: .milliseconds(100), jitter: 0))
        let link = try await Self.connect(central, vc, reconnect: policy)
        let events = await central.connectionEvents()
        let creates = vc.commandsReceived.filter { $0.opcode == Self.leCreateConnection }.count
        faulty.cut(reason: "controller unplugged")
        await vc.settle()
        // A minute of virtual time: no reconnect attempt while the adapter is not powered on.
        for _ in 0..<60 { await vc.advance(by: .seconds(1)) }
        #expect(await central.state == .transportLost)
        #expect(vc.commandsReceived.filter { $0.opcode == Self.leCreateConnection }.count == creates)
        await central.close()
        var seen: [ConnectionEvent] = []
        for await e in events { seen.append(e.event) }
        #expect(seen.filter { if case .disconnected = $0 { true } else { false } } == [.disconnected(reason: .connectionTerminatedByLocalHost, willReconnect: false)])
        #expect(!seen.contains { if case .reconnecting = $0 { true } else if case .connecting = $0 { true } else { false } })
        #expect(await !link.isConnected)
        #expect(await vc.clock!.pendingCount() == 0)
    }
}

extension Central {
    /// Returns once a command waits behind the one in flight (the connect attempt above):
    /// two callers wait for their commands, and a real-time bound ends a wait that never gets there.
    func waitUntilCommandWaits() async throws {
        try await host.commandWaiters.waitForCount("a command queued behind the one in flight") { $0 == 2 }
        #expect(await !host.waitingCommands.isEmpty)
    }
}

extension HCIHost {
    /// Links the host still tracks.
    var linkCount: Int { links.count }
}
