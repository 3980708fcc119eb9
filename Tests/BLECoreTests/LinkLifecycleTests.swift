import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// The link state machine of `Connection` on the in-process virtual controller in manual
/// time: its states as a stream, the caller's connect timeout on reconnect attempts, a second
/// `connect` with other options, and controller resets (Hardware Error, HCI_Reset).
@Suite(.timeLimit(.minutes(1)))
struct LinkLifecycleTests {
    static let absent = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_31), type: .random)
    /// HCI_LE_Create_Connection (Vol 4, Part E, 7.8.12) and its Cancel (7.8.13).
    static let leCreateConnection = HCIOpcode(rawValue: 0x200D)
    static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)
    static let policy = ReconnectPolicy.always(maxAttempts: 3, backoff: .exponential(initial: .seconds(1), jitter: 0))

    static func quiet() -> ConnectionRequestParameters {
        var p = ConnectionRequestParameters()
        p.requestDataLengthExtension = false
        p.request2MPHY = false
        return p
    }

    @Test func linkStatesFollowDropRestoreAndDisconnect() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, reconnect: Self.policy, parameters: Self.quiet())
        var states = await link.linkStates().makeAsyncIterator()
        // The story starts with the first attempt, which ran before `connect` returned.
        #expect(await states.next() == .connecting(attempt: 1))
        #expect(await states.next() == .connected(handle: 0x0040))
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        #expect(await states.next() == .reconnecting(attempt: 1))
        await vc.advance(by: .seconds(1))
        #expect(await states.next() == .connecting(attempt: 2))
        #expect(await states.next() == .connected(handle: 0x0041))
        try await link.disconnect()
        #expect(await states.next() == .disconnecting(handle: 0x0041))
        #expect(await states.next() == .closed(.disconnected(reason: .connectionTerminatedByLocalHost)))
        #expect(await central.connectionsByPeer.isEmpty)
    }

    /// Every subscriber, early or late, gets the whole story from the first attempt, and
    /// then the changes as they happen.
    @Test func aLateSubscriberGetsTheStoryFromTheFirstAttempt() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, reconnect: Self.policy, parameters: Self.quiet())
        var early = await link.linkStates().makeAsyncIterator()
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        #expect(await early.next() == .connecting(attempt: 1))
        #expect(await early.next() == .connected(handle: 0x0040))
        #expect(await early.next() == .reconnecting(attempt: 1))
        await vc.advance(by: .seconds(1))
        #expect(await early.next() == .connecting(attempt: 2))
        #expect(await early.next() == .connected(handle: 0x0041))

        var late = await link.linkStates().makeAsyncIterator()
        let story: [LinkState] = [.connecting(attempt: 1), .connected(handle: 0x0040), .reconnecting(attempt: 1), .connecting(attempt: 2), .connected(handle: 0x0041)]
        for state in story { #expect(await late.next() == state) }
        #expect(await link.linkState == .connected(handle: 0x0041))
        try await link.disconnect()
        #expect(await late.next() == .disconnecting(handle: 0x0041))
        #expect(await early.next() == .disconnecting(handle: 0x0041))
        await central.close()
    }

    @Test func reconnectAttemptIsBoundedByTheCallersConnectTimeout() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, timeout: .seconds(3), reconnect: Self.policy, parameters: Self.quiet())
        #expect(await link.connectTimeout == .seconds(3))
        var events = await link.events().makeAsyncIterator()
        vc.removePeripheral(VC.peer) // the attempt stays pending: the peer does not advertise
        try vc.disconnect(VC.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: .seconds(1)))
        await vc.advance(by: .seconds(1))
        try await vc.waitForCommand(Self.leCreateConnection, count: 2)
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        await vc.advance(by: .milliseconds(2900))
        #expect(!vc.commandsReceived.contains { $0.opcode == Self.leCreateConnectionCancel })
        // 3 s after the attempt started, not 10 s: the attempt is cancelled and the next one scheduled.
        await vc.advance(by: .milliseconds(100))
        try await vc.waitForCommand(Self.leCreateConnectionCancel)
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 2, delay: .seconds(2)))
        await central.close()
    }

    @Test func connectWithOtherOptionsToAConnectedPeerThrowsAlreadyConnected() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, reconnect: Self.policy)
        // The same options: the same connection, and no second LE Create Connection.
        #expect(try await central.connect(VC.peer, reconnect: Self.policy) === link)
        #expect(vc.commandsReceived.filter { $0.opcode == Self.leCreateConnection }.count == 1)

        await #expect(throws: ConnectionError.alreadyConnected(peer: VC.peer, differing: [.timeout])) {
            try await central.connect(VC.peer, timeout: .seconds(5), reconnect: Self.policy)
        }
        await #expect(throws: ConnectionError.alreadyConnected(peer: VC.peer, differing: [.reconnect, .parameters])) {
            try await central.connect(VC.peer, parameters: Self.quiet())
        }
        let error = ConnectionError.alreadyConnected(peer: VC.peer, differing: [.reconnect])
        #expect("\(error)" == "\(VC.peer) already has a connection, made with another reconnect: use that connection, or disconnect() it first and connect again with the new options")
        #expect(await link.isConnected)
        #expect(vc.commandsReceived.filter { $0.opcode == Self.leCreateConnection }.count == 1)
    }

    @Test func hardwareErrorFailsThePendingAttemptAndClosesLinksWithoutPolicy() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, parameters: Self.quiet())
        var events = await link.events().makeAsyncIterator()
        let attempt = Task { () async -> ConnectionError? in
            do throws(ConnectionError) { _ = try await central.connect(Self.absent); return nil } catch { return error }
        }
        try await vc.waitForCommand(Self.leCreateConnection, count: 2)
        vc.hardwareError(code: 0x07)
        #expect(await attempt.value == .command(peer: Self.absent, .hardwareError(code: 0x07)))
        #expect(await events.nextLifecycle() == .disconnected(reason: .hardwareFailure, willReconnect: false))
        #expect(await link.linkState == .closed(.disconnected(reason: .hardwareFailure)))
        #expect(await central.state == .resetting)
        #expect(await central.pendingConnect == nil)
        #expect(await central.connectionsByPeer.isEmpty)

        // Powered on again: HCI_Reset, and the adapter works again.
        try await central.powerOn()
        #expect(await central.state == .poweredOn)
        #expect(vc.connections.isEmpty)
        #expect(try await central.connect(VC.peer).isConnected)
    }

    @Test func powerOnWhileConnectedResetsTheControllerAndRestoresTheLink() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await central.connect(VC.peer, reconnect: Self.policy, parameters: Self.quiet())
        var events = await link.events().makeAsyncIterator()
        try await central.powerOn()
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTerminatedByLocalHost, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: .seconds(1)))
        #expect(vc.connections.isEmpty) // HCI_Reset ended the link at the controller
        await vc.advance(by: .seconds(1))
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected? = await events.nextLifecycle() else { Issue.record("the link was not restored"); return }
        #expect(vc.connections.count == 1)
        #expect(await central.host.linkCount == 1)
    }

    @Test func resetAfterHardwareErrorPowersOnByItselfAndRestoresTheLink() async throws {
        let (vc, central) = try await VC.stack(central: { $0.resetAfterHardwareError = true })
        let link = try await central.connect(VC.peer, reconnect: Self.policy, parameters: Self.quiet())
        var events = await link.events().makeAsyncIterator()
        var states = await central.stateEvents().makeAsyncIterator()
        #expect(await states.next() == .poweredOn)
        // HCI_Reset (Vol 4, Part E, 7.3.2).
        let resets = vc.commandsReceived.filter { $0.opcode.rawValue == 0x0C03 }.count
        vc.hardwareError(code: 0x01)
        #expect(await events.nextLifecycle() == .disconnected(reason: .hardwareFailure, willReconnect: true))
        #expect(await states.next() == .resetting)
        #expect(await states.next() == .poweredOn)
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: .seconds(1)))
        #expect(vc.commandsReceived.filter { $0.opcode.rawValue == 0x0C03 }.count == resets + 1)
        await vc.advance(by: .seconds(1))
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected? = await events.nextLifecycle() else { Issue.record("the link was not restored"); return }
        #expect(await central.state == .poweredOn)
    }

    /// A link on a controller with one ACL buffer and completions held back: one ATT PDU holds
    /// the buffer and a second send waits behind it.
    static func oneBufferHeldOneSendQueued() async throws
        -> (VirtualController, Central, any L2CAPChannel, Task<Void, any Error>) {
        let (vc, central) = try await VC.stack { o in o.aclPacketCount = 1; o.packetCompletion = .manual }
        let link = try await central.connect(VC.peer, parameters: Self.quiet())
        let channel = try await link.attChannel()
        try await channel.send([0x52, 0x03, 0x00, 0x01]) // holds the one controller buffer
        let queued = vc.task { try await channel.send([0x52, 0x03, 0x00, 0x02]) }
        await vc.settle()
        #expect(await central.host.aclCredits == 0)
        return (vc, central, channel, queued)
    }

    @Test func hardwareErrorFailsQueuedSendsAndFreesEveryBuffer() async throws {
        let (vc, central, channel, queued) = try await Self.oneBufferHeldOneSendQueued()
        vc.hardwareError(code: 0x05)
        let error = LinkError.controllerReset(peer: VC.peer.address, hardwareError: 0x05)
        await #expect(throws: error) { try await queued.value }
        #expect("\(error)".contains("Hardware Error 0x05"))
        #expect(await central.host.aclCredits == 1)
        #expect(await central.host.readyLinks.isEmpty)
        #expect(vc.aclReceived.count == 1)
        await #expect(throws: LinkError.self) { try await channel.send([0x52, 0x03, 0x00, 0x03]) }
    }

    /// Disconnection Complete (Vol 4, Part E, 7.7.5) with a packet in the controller's one
    /// buffer and a PDU queued behind it: the queued send fails with the reason, the buffer
    /// comes back (4.3), the link leaves the host's tables, and the ATT channel is closed.
    @Test func disconnectionCompleteFailsQueuedSendsAndFreesTheLinksBuffer() async throws {
        let (vc, central, channel, queued) = try await Self.oneBufferHeldOneSendQueued()
        let handle = try #require(vc.handle(of: VC.peer))
        try vc.disconnect(VC.peer, reason: .remoteUserTerminatedConnection)
        let error = LinkError.disconnected(peer: VC.peer.address, reason: .remoteUserTerminatedConnection)
        await #expect(throws: error) { try await queued.value }
        #expect(await central.host.aclCredits == 1)
        #expect(await central.host.readyLinks.isEmpty)
        #expect(await central.host.hasLink(handle) == false)
        #expect(vc.aclReceived.count == 1)
        await #expect(throws: error) { try await channel.send([0x52, 0x03, 0x00, 0x03]) }
    }
}
