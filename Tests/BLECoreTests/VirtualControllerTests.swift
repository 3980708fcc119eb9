import Testing
import BLECore
import BLETestSupport
import BLEWire

/// A real `Central` against the virtual controller: bring-up, command flow control and
/// connection set-up. Expected values come from the Core Specification (opcodes in Vol 4,
/// Part E, 7; status codes in Vol 1, Part F).
@Suite(.timeLimit(.minutes(1)))
struct VirtualControllerTests {
    @Test func bringUpReportsConfiguredBuffersAndFeatures() async throws {
        let (vc, central) = try await VC.stack { o in
            o.aclPacketLength = 27
            o.aclPacketCount = 2
            o.supportsReadBufferSizeV2 = true
            o.leFeatures = [.leDataPacketLengthExtension, .le2MPHY, .leExtendedAdvertising]
        }
        let info = try #require(await central.controllerInfo)
        #expect(info.aclPacketLength == 27)
        #expect(info.aclPacketCount == 2)
        #expect(info.leFeatures == [.leDataPacketLengthExtension, .le2MPHY, .leExtendedAdvertising])
        #expect(info.address == vc.address)
        #expect(info.supportsLE)
        #expect(info.supportsExtendedScanning)
        #expect(info.supportsExtendedCreateConnection)
        #expect(!info.sharesBREDRBuffers)
        let opcodes = vc.commandsReceived.map(\.opcode.rawValue)
        #expect(opcodes.first == 0x0C03) // HCI_Reset first
        #expect(opcodes.contains(0x2060)) // LE Read Buffer Size [v2] when listed
        #expect(!opcodes.contains(0x2002))
        #expect(await central.state == .poweredOn)
    }

    @Test func unknownCommandGetsUnknownHCICommand() async throws {
        let (_, central) = try await VC.stack()
        // HCI_Read_Local_Name (0x0C14) is not implemented: status 0x01 Unknown HCI Command.
        await #expect(throws: HCIError.commandFailed(opcode: HCIOpcode(rawValue: 0x0C14), status: HCIStatus(rawValue: 0x01))) {
            try await central.host.send(HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C14)))
        }
    }

    @Test func hostHoldsCommandsUntilCreditsAreGranted() async throws {
        var options = VirtualController.Options()
        options.numHCICommandPackets = 0
        let vc = VirtualController(options: options)
        let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
        let powerOn = vc.task { try await central.powerOn() }
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x0C03))
        await vc.settle()
        // Command Complete for Reset carried Num_HCI_Command_Packets = 0: nothing else may come.
        #expect(vc.commandsReceived.map(\.opcode.rawValue) == [0x0C03])
        vc.grantCommandCredits(1)
        _ = try await powerOn.value
        // The bring-up in order (HCIHost.initializeController), none beyond the credits given.
        #expect(vc.commandsReceived.map(\.opcode.rawValue) == [0x0C03, 0x1001, 0x1002, 0x1003, 0x2003, 0x2002, 0x0C01, 0x2001, 0x1009])
        #expect(vc.commandFlowControlViolations == 0)
    }

    @Test func connectGivesConnectedConnection() async throws {
        let server = EchoATTServer()
        let (vc, central) = try await VC.stack(server: server)
        let connection = try await central.connect(VC.peer)
        #expect(await connection.isConnected)
        #expect(await connection.handle == 0x0040)
        let create = try await vc.waitForCommand(.leCreateConnection)
        let decoded = try HCICommand.LECreateConnection(parameters: create.parameters)
        #expect(decoded.peerAddress == VC.peer.address)
        #expect(decoded.peerAddressType == 0x01)
        #expect(vc.connections.map(\.peer) == [VC.peer])
        #expect(server.connects.load(ordering: .relaxed) == 1)
        // Link set-up: remote features, then 2M PHY as both sides support it.
        try await vc.waitForCommand(.leSetPHY)
        await vc.settle()
        let phy = await connection.phy
        #expect(phy.tx == .le2M && phy.rx == .le2M)
    }

    @Test func extendedCreateConnectionWithEnhancedCompleteV2() async throws {
        let (vc, central) = try await VC.stack { o in
            o.leFeatures = [.leExtendedAdvertising]
            o.connectionCompleteEvent = .enhancedV2
        }
        let connection = try await central.connect(VC.peer)
        #expect(await connection.isConnected)
        try await vc.waitForCommand(.leExtendedCreateConnection)
        #expect(vc.eventsSent.contains { $0.code == 0x3E && $0.parameters.first == 0x29 }) // Enhanced Connection Complete [v2]
    }

    @Test func commandDisallowedFailsTheConnect() async throws {
        let (vc, central) = try await VC.stack()
        vc.answer(.leCreateConnection, with: .status(.commandDisallowed), times: 1)
        await #expect(throws: ConnectionError.failed(peer: VC.peer, status: .commandDisallowed)) {
            _ = try await central.connect(VC.peer)
        }
        // The script applied once: the next attempt connects.
        #expect(try await central.connect(VC.peer).isConnected)
    }

    @Test func connectionFailedToBeEstablished() async throws {
        let (vc, central) = try await VC.stack()
        vc.failConnections(with: .connectionFailedToBeEstablished)
        await #expect(throws: ConnectionError.failed(peer: VC.peer, status: .connectionFailedToBeEstablished)) {
            _ = try await central.connect(VC.peer)
        }
    }

    @Test func connectTimeoutCancelsThenConnectsAgain() async throws {
        let absent = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
        let (vc, central) = try await VC.stack()
        let attempt = vc.task { try await central.connect(absent, timeout: .seconds(2)) }
        try await vc.waitForCommand(.leCreateConnection)
        await vc.advance(by: .seconds(2))
        await #expect(throws: ConnectionError.timeout(peer: absent, milliseconds: 2000)) { _ = try await attempt.value }
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x200E)) // LE Create Connection Cancel
        // LE Connection Complete (subevent 0x01) with status 0x02 Unknown Connection Identifier.
        #expect(vc.eventsSent.contains { $0.code == 0x3E && $0.parameters.prefix(2) == [0x01, 0x02] })
        vc.addPeripheral(SimulatedPeripheral(address: absent))
        #expect(try await central.connect(absent, timeout: .seconds(2)).isConnected)
    }

    @Test func taskCancellationCancelsTheAttempt() async throws {
        let absent = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_02), type: .random)
        let (vc, central) = try await VC.stack()
        let attempt = Task { try await central.connect(absent) }
        try await vc.waitForCommand(.leCreateConnection)
        attempt.cancel()
        await #expect(throws: ConnectionError.cancelled(peer: absent)) { _ = try await attempt.value }
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x200E))
        #expect(vc.eventsSent.contains { $0.code == 0x3E && $0.parameters.prefix(2) == [0x01, 0x02] })
        vc.addPeripheral(SimulatedPeripheral(address: absent))
        #expect(try await central.connect(absent).isConnected)
    }

    @Test func localDisconnectReportsTerminatedByLocalHost() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        try await connection.disconnect()
        #expect(await !connection.isConnected)
        // Disconnection Complete: status 0, handle 0x0040, reason 0x16 (Vol 4, Part E, 7.7.5).
        #expect(vc.eventsSent.contains { $0.code == 0x05 && $0.parameters == [0x00, 0x40, 0x00, 0x16] })
        #expect(vc.connections.isEmpty)
    }
}
