import Testing
import Dispatch
import Synchronization
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import BLEWire

/// Cancelling the task of a call that waits ends the wait at once with the layer's typed
/// error, and leaves the stack working. Everything runs on the in-process virtual controller
/// in manual time, and virtual time never moves: only the cancellation can end these waits.
/// Opcodes, event codes and parameter layouts come from the Core Specification, Vol 4,
/// Part E (7.1.6 Disconnect, 7.4.1 Read Local Version Information, 7.4.6 Read BD_ADDR,
/// 7.5.4 Read RSSI, 7.7.14 Command Complete, 7.7.15 Command Status, 7.7.65.1 LE Connection
/// Complete, 7.8.12 LE Create Connection, 7.8.13 LE Create Connection Cancel).
@Suite(.timeLimit(.minutes(1)))
struct CancellationTests {
    static let absent = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_0C_01), type: .random)
    static let readBDADDR = HCIOpcode(rawValue: 0x1009)
    static let readLocalVersion = HCIOpcode(rawValue: 0x1001)
    static let disconnect = HCIOpcode(rawValue: 0x0406)
    static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)
    static let leReadRemoteFeatures = HCIOpcode(rawValue: 0x2016)

    /// No data length or PHY request after connecting: only LE Read Remote Features follows.
    static var quiet: ConnectionRequestParameters {
        var p = ConnectionRequestParameters()
        p.requestDataLengthExtension = false
        p.request2MPHY = false
        return p
    }

    /// A link to `VC.peer` whose set-up after connecting is over.
    static func connected(_ vc: VirtualController, _ central: Central, reconnect: ReconnectPolicy = .never) async throws -> Connection {
        let link = try await bounded { try await central.connect(VC.peer, reconnect: reconnect, parameters: quiet) }
        try await vc.waitForCommand(leReadRemoteFeatures)
        await vc.settle()
        return link
    }

    // MARK: HCI commands

    @Test func commandCancelledAfterSendingKeepsItsCreditUntilItsCompletion() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        // No answer now; answering with no events leaves the controller's own credit
        // bookkeeping as after an answer, so the completion injected below is the one it owed.
        vc.answer(Self.readBDADDR, with: .events { _ in [] }, times: 1)
        let call = Task { try await host.send(HCICommand.readBDADDR()) }
        try await vc.waitForCommand(Self.readBDADDR, count: 2) // the first was part of the bring-up
        try await host.commandWaiters.waitForCount("the Read BD_ADDR caller parked") { $0 == 1 }
        #expect(await host.sentCommands.count == 1)
        call.cancel()
        #expect(await failure(of: call) as? HCIError == .cancelledAfterSending(opcode: Self.readBDADDR))

        // The command is still the controller's: it holds the one command credit.
        #expect(await host.commandCredits == 0)
        #expect(await host.sentCommands.map(\.packet.opcode) == [Self.readBDADDR])
        let next = vc.task { try await host.send(HCICommand.readBDADDR()) }
        try await host.commandWaiters.waitForCount("the next command queued") { $0 == 1 }
        #expect(await host.waitingCommands.count == 1)
        await vc.settle()
        #expect(vc.commandsReceived.filter { $0.opcode == Self.readBDADDR }.count == 2, "nothing goes out before the credit is back")

        // Command Complete: Num_HCI_Command_Packets 1, opcode 0x1009 (little-endian), status 0,
        // BD_ADDR. It ends the cancelled command, and its credit lets the next one go.
        let address = vc.address.littleEndianBytes
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x09, 0x10, 0x00] + address)))
        #expect(try await value(of: next) == [0x00] + address)
        #expect(await host.sentCommands.isEmpty)
        #expect(await host.commandCredits == 1)
        #expect(vc.commandFlowControlViolations == 0)
    }

    @Test func commandCancelledWhileWaitingForACreditIsNeverSent() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        vc.setCommandCredits(0)
        _ = try await bounded { try await host.send(HCICommand.readBDADDR()) } // answered with Num_HCI_Command_Packets 0
        #expect(await host.commandCredits == 0)
        let call = Task { try await host.send(HCICommand.readLocalVersionInformation()) }
        try await host.commandWaiters.waitForCount("the command queued for a credit") { $0 == 1 }
        #expect(await host.waitingCommands.count == 1)
        call.cancel()
        #expect(await failure(of: call) as? HCIError == .cancelled(opcode: Self.readLocalVersion))
        #expect(await host.waitingCommands.isEmpty)

        vc.grantCommandCredits(1)
        let rp = try await bounded { try await host.send(HCICommand.readBDADDR()) }
        #expect(rp == [0x00] + vc.address.littleEndianBytes)
        // Read Local Version Information went out once, during the bring-up, never again.
        #expect(vc.commandsReceived.filter { $0.opcode == Self.readLocalVersion }.count == 1)
        #expect(vc.commandFlowControlViolations == 0)
    }

    // MARK: Connecting

    @Test func connectCancelledWhileWaitingForTheCompletion() async throws {
        let (vc, central) = try await VC.stack()
        let attempt = Task { try await central.connect(Self.absent) }
        try await vc.waitForCommand(.leCreateConnection)
        try await central.connectWaiters.waitForCount("the connect caller parked") { $0 == 1 }
        #expect(await central.pendingConnect?.waiter != nil)
        attempt.cancel()
        #expect(await failure(of: attempt) as? ConnectionError == .cancelled(peer: Self.absent))
        try await vc.waitForCommand(Self.leCreateConnectionCancel)
        // LE Connection Complete, status 0x02 Unknown Connection Identifier: the attempt ended.
        try await vc.waitUntil("the cancelled attempt completed") { vc in
            vc.eventsSent.contains { $0.code == 0x3E && $0.parameters.prefix(2) == [0x01, 0x02] }
        }
        let link = try await Self.connected(vc, central)
        #expect(await link.isConnected)
        #expect(await central.pendingConnect == nil)
    }

    /// The caller returns at once even when the controller is slow to cancel; the next
    /// attempt waits until the cancelled one has ended, and a link that attempt made anyway
    /// is disconnected.
    @Test func connectCancelledReturnsAtOnceWhileTheControllerIsSlowToCancel() async throws {
        let (vc, central) = try await VC.stack()
        vc.answer(Self.leCreateConnectionCancel, with: .events { _ in [] }, times: 1)
        let attempt = Task { try await central.connect(Self.absent) }
        try await vc.waitForCommand(.leCreateConnection)
        try await central.connectWaiters.waitForCount("the connect caller parked") { $0 == 1 }
        #expect(await central.pendingConnect?.waiter != nil)
        attempt.cancel()
        #expect(await failure(of: attempt) as? ConnectionError == .cancelled(peer: Self.absent))
        try await vc.waitForCommand(Self.leCreateConnectionCancel)
        #expect(await central.pendingConnect?.callerGone == true)

        let next = vc.task { try await central.connect(VC.peer, parameters: Self.quiet) }
        try await central.connectTurns.waitForCount("the next attempt waiting for its turn") { $0 == 1 }
        await vc.settle()
        #expect(vc.commandsReceived.filter { $0.opcode == .leCreateConnection }.count == 1, "the next attempt waits")

        // Command Complete for LE Create Connection Cancel: 1 credit, opcode 0x200E, status 0.
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x0E, 0x20, 0x00])))
        // The controller's attempt then succeeds anyway (the peer shows up, handle 0x0040).
        vc.addPeripheral(SimulatedPeripheral(address: Self.absent))
        let link = try await value(of: next)
        #expect(link.peer == VC.peer)
        #expect(await link.isConnected)
        // HCI_Disconnect of the unwanted link: handle 0x0040, reason 0x13.
        let disconnect = try await vc.waitForCommand(Self.disconnect)
        #expect(disconnect.parameters == [0x40, 0x00, 0x13])
        try await vc.waitUntil("only the new link") { $0.connections.map(\.peer) == [VC.peer] }
    }

    @Test func connectCancelledWhileWaitingForItsTurn() async throws {
        let (vc, central) = try await VC.stack()
        let first = Task { try await central.connect(Self.absent) }
        try await vc.waitForCommand(.leCreateConnection)
        let second = Task { try await central.connect(VC.peer, parameters: Self.quiet) }
        try await central.connectTurns.waitForCount("the next attempt waiting for its turn") { $0 == 1 }
        second.cancel()
        #expect(await failure(of: second) as? ConnectionError == .cancelled(peer: VC.peer))
        #expect(await central.isolated { $0.connectTurns.isEmpty })
        // The first attempt goes on undisturbed; the second never reached the controller.
        #expect(await central.pendingConnect?.peer == Self.absent)
        #expect(await central.pendingConnect?.callerGone == false)
        #expect(vc.commandsReceived.filter { $0.opcode == .leCreateConnection }.count == 1)

        first.cancel()
        #expect(await failure(of: first) as? ConnectionError == .cancelled(peer: Self.absent))
        try await vc.waitForCommand(Self.leCreateConnectionCancel)
        let link = try await Self.connected(vc, central)
        #expect(await link.isConnected)
    }

    /// Cancelled while LE Create Connection waits for its Command Status: the attempt may be
    /// running at the controller, so it is cancelled there once the status came.
    @Test func connectCancelledBeforeTheCommandStatusCancelsTheAttemptAfterIt() async throws {
        let (vc, central) = try await VC.stack()
        vc.answer(.leCreateConnection, with: .events { _ in [] }, times: 1)
        let attempt = Task { try await central.connect(Self.absent) }
        try await vc.waitForCommand(.leCreateConnection)
        try await central.host.commandWaiters.waitForCount("LE Create Connection waiting for its status") { $0 == 1 }
        #expect(await central.host.sentCommands.count == 1)
        attempt.cancel()
        #expect(await failure(of: attempt) as? ConnectionError == .cancelled(peer: Self.absent))
        #expect(await central.pendingConnect?.callerGone == true)

        // Command Status: status 0, 1 credit, opcode 0x200D. The cancel follows it.
        vc.inject(.event(HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x0D, 0x20])))
        try await vc.waitForCommand(Self.leCreateConnectionCancel)
        // LE Connection Complete: subevent 0x01, status 0x02, handle 0, role 0 (central), peer
        // address type 1 (random), peer address, interval, latency, supervision timeout, clock
        // accuracy (all 0 on failure).
        vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x01, 0x02, 0x00, 0x00, 0x00, 0x01]
            + Self.absent.address.littleEndianBytes + [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])))
        let link = try await Self.connected(vc, central)
        #expect(await link.isConnected)
        #expect(await central.pendingConnect == nil)
    }

    // MARK: Disconnecting and closing

    @Test func disconnectCancelledWhileWaitingForDisconnectionComplete() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await Self.connected(vc, central)
        // Command Status, success, and no Disconnection Complete.
        vc.answer(Self.disconnect, with: .status(.success), times: 1)
        let call = Task { try await link.disconnect() }
        try await vc.waitForCommand(Self.disconnect)
        try await link.disconnectWaiters.waitForCount("disconnect() waiting for Disconnection Complete") { $0 == 1 }
        call.cancel()
        #expect(await failure(of: call) as? ConnectionError == .command(peer: VC.peer, .cancelledAfterSending(opcode: Self.disconnect)))
        #expect(await link.isolated { $0.disconnectWaiters.isEmpty })
        #expect(await link.isConnected)

        try await bounded { try await link.disconnect() }
        #expect(await !link.isConnected)
        #expect(vc.connections.isEmpty)
    }

    @Test func disconnectCancelledBeforeItWasSentLeavesTheLinkAsItWas() async throws {
        let (vc, central) = try await VC.stack()
        let policy = ReconnectPolicy.always(maxAttempts: 1, backoff: .exponential(initial: .milliseconds(500), jitter: 0))
        let link = try await Self.connected(vc, central, reconnect: policy)
        vc.setCommandCredits(0)
        _ = try await bounded { try await link.readRSSI() } // answered with Num_HCI_Command_Packets 0
        let call = Task { try await link.disconnect() }
        try await central.host.commandWaiters.waitForCount("HCI Disconnect queued for a credit") { $0 == 1 }
        #expect(await central.host.waitingCommands.count == 1)
        call.cancel()
        #expect(await failure(of: call) as? ConnectionError == .command(peer: VC.peer, .cancelled(opcode: Self.disconnect)))
        #expect(await link.linkState == .connected(handle: 0x0040))
        vc.grantCommandCredits(1)
        _ = try await bounded { try await link.readRSSI() }
        #expect(!vc.commandsReceived.contains { $0.opcode == Self.disconnect })
        #expect(await link.isConnected)

        // The reconnect policy still applies: a drop is followed by a restore.
        var events = await link.events().makeAsyncIterator()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        #expect(await events.next() == .disconnected(reason: .connectionTimeout, willReconnect: true))
    }

    @Test func closeFromACancelledTaskStillClosesWithoutWaiting() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await Self.connected(vc, central)
        vc.answer(Self.disconnect, with: .status(.success), times: 1) // no Disconnection Complete
        let close = Task { await central.close() }
        try await vc.waitForCommand(Self.disconnect)
        try await link.disconnectWaiters.waitForCount("disconnect() waiting for Disconnection Complete") { $0 == 1 }
        close.cancel()
        #expect(await outcome(of: close) != nil, "close() returns once cancelled")
        #expect(await central.state == .poweredOff)
        #expect(await !link.isConnected)
        #expect(await central.host.lostReason != nil)
    }

    @Test func closeFromACancelledTaskSendsDisconnectForEveryLink() async throws {
        let second = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_66), type: .random)
        let (vc, central) = try await VC.stack()
        vc.addPeripheral(SimulatedPeripheral(address: second, advertisingData: [0x02, 0x01, 0x06], attServer: EchoATTServer()))
        let first = try await Self.connected(vc, central)
        let other = try await bounded { try await central.connect(second, reconnect: .never, parameters: Self.quiet) }
        try await vc.waitForCommand(Self.leReadRemoteFeatures, count: 2)
        await vc.settle()
        let handles = [try #require(await first.handle), try #require(await other.handle)]
        #expect(handles[0] != handles[1])

        // The task is cancelled before close() starts, as after Ctrl-C.
        let close = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await central.close()
        }
        #expect(await outcome(of: close) != nil, "close() returns from a cancelled task")
        // HCI_Disconnect (Vol 4, Part E, 7.1.6): Connection_Handle little-endian, then the
        // Reason 0x13 (Remote User Terminated Connection), once per link.
        let sent = vc.commandsReceived.filter { $0.opcode == Self.disconnect }.map { Array($0.parameters) }
        #expect(sent.count == 2)
        #expect(Set(sent) == Set(handles.map { [UInt8($0 & 0xFF), UInt8($0 >> 8), 0x13] }))
        #expect(await central.state == .poweredOff)
        #expect(await central.host.lostReason != nil)
    }

    // MARK: ACL data

    @Test func sendL2CAPCancelledWhileWaitingForABuffer() async throws {
        let (vc, central) = try await VC.stack { o in
            o.aclPacketCount = 1
            o.packetCompletion = .manual
        }
        let link = try await Self.connected(vc, central)
        let handle = try #require(await link.handle)
        let host = central.host
        // ATT_WRITE_CMD (Vol 3, Part F, 3.4.5.3): opcode 0x52, handle 0x0003, value 0x01.
        let writeCommand: [UInt8] = [0x52, 0x03, 0x00, 0x01]
        try await bounded { try await host.sendL2CAP(handle: handle, channelID: L2CAPChannelID.att, payload: writeCommand) }
        #expect(await host.aclCredits == 0)
        let call = Task { try await host.sendL2CAP(handle: handle, channelID: L2CAPChannelID.att, payload: writeCommand) }
        try await host.sendWaiters.waitForCount("the PDU queued for a buffer") { $0 == 1 }
        #expect(await host.readyLinks == [handle])
        call.cancel()
        #expect(await failure(of: call) as? LinkError == .cancelled(peer: VC.peer.address, handle: handle, channelID: L2CAPChannelID.att))

        // The fragment already queued still goes out once the controller returns the buffer,
        // and so does the next PDU after the next one.
        vc.completePackets()
        try await vc.waitForL2CAP(channelID: L2CAPChannelID.att, count: 2)
        let next = Task { try await host.sendL2CAP(handle: handle, channelID: L2CAPChannelID.att, payload: writeCommand) }
        try await host.sendWaiters.waitForCount("the PDU queued for a buffer") { $0 == 1 }
        #expect(await host.readyLinks == [handle])
        vc.completePackets()
        try await value(of: next)
        try await vc.waitForL2CAP(channelID: L2CAPChannelID.att, count: 3)
        #expect(vc.aclFlowControlViolations == 0)
        #expect(await link.isConnected)
    }

    // MARK: Test-support waits

    @Test func virtualControllerWaitEndsWhenCancelled() async throws {
        let (vc, _) = try await VC.stack()
        let wait = Task { try await vc.waitUntil("something that never happens", timeout: .seconds(60)) { _ in false } }
        try await vc.waitUntil("the first wait added") { vc in vc.waiters.contains { $0.what == "something that never happens" } }
        wait.cancel()
        #expect(await failure(of: wait) as? VirtualControllerError == .cancelled(waitingFor: "something that never happens"))
        #expect(vc.onQueue { vc.waiters.isEmpty && vc.unaddedWaiters.isEmpty })
        // Already cancelled before it starts: it ends at once too.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await vc.waitUntil("nothing", timeout: .seconds(60)) { _ in false }
        }
        #expect(await failure(of: early) as? VirtualControllerError == .cancelled(waitingFor: "nothing"))
        #expect(vc.onQueue { vc.waiters.isEmpty && vc.unaddedWaiters.isEmpty })
    }

    @Test func faultWaitEndsWhenCancelled() async throws {
        let vc = VirtualController()
        let faulty = FaultInjectingTransport(wrapping: vc.makeTransport(), scheduler: vc.clock)
        let central = Central(transport: faulty, options: vc.centralOptions())
        try await bounded { try await central.powerOn() }
        let wait = Task { await faulty.waitForFaults(count: 1_000, timeout: .seconds(60)) }
        await Task.yield()
        wait.cancel()
        guard case .success(let met)? = await outcome(of: wait) else {
            Issue.record("waitForFaults did not return within the bound once cancelled")
            return
        }
        #expect(!met)
    }
}

// MARK: - Bounded waits (outcome, value and bounded come from BLETestSupport)

/// The error `task` ended with (nil, with an issue recorded, when it succeeded or did not end
/// within the bound).
fileprivate func failure<T: Sendable>(of task: Task<T, any Error>, within seconds: Double = 10) async -> (any Error)? {
    switch await outcome(of: task, within: seconds) {
    case .failure(let error)?:
        return error
    case .success?:
        Issue.record("the call succeeded; it should have been cancelled")
        return nil
    case nil:
        Issue.record("the call did not end within \(seconds) s of being cancelled")
        return nil
    }
}
