import Testing
import BLECore
import BLEWire

/// `LinkLifecycle` from tables: (phase, event) -> (actions, phase), for the link after its
/// connect attempt made it (LE Connection Complete, Core Spec Vol 4, Part E, 7.7.65.1, or LE
/// Enhanced Connection Complete, 7.7.65.10). HCI Disconnect (7.1.6) is answered by a Command
/// Status, then Disconnection Complete (7.7.5) whose Status 0x00 means the link is gone (its
/// Reason says why: ours, or the peer's when its disconnection crossed ours) and any other
/// Status that it is not. Timers and attempt tasks are numbers here; the reconnect policy has
/// no jitter so its delays are exact (500 ms, then 1,000 ms).
@Suite struct LinkLifecycleTableTests {
    typealias Link = LinkLifecycle<Int, Int>
    static let handle: UInt16 = 0x0040
    // Status and reason codes of Vol 1, Part F, 2.
    static let unknownConnection = HCIStatus(rawValue: 0x02)
    static let connectionTimeout = HCIStatus(rawValue: 0x08)
    static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    static let remoteUserTerminated = HCIStatus(rawValue: 0x13)
    static let localHostTerminated = HCIStatus(rawValue: 0x16)
    static let failedToEstablish = HCIStatus(rawValue: 0x3E)
    static let twice = ReconnectPolicy.always(maxAttempts: 2, backoff: .exponential(initial: .milliseconds(500), multiplier: 2, jitter: 0))
    static let restored = MadeLink(handle: 0x0041, parameters: ConnectionParameters(hciInterval: 24, peripheralLatency: 0, hciSupervisionTimeout: 72))
    static let closeWhy = "disconnect() was called while the link was being restored"

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        var policy = ReconnectPolicy.never
        let before: [Link.Event]
        let event: Link.Event
        let actions: [Link.Action]
        let after: Link.Phase
        var testDescription: String { name }
    }

    static func complete(_ status: HCIStatus = .success, reason: HCIStatus, adapter: AdapterState = .poweredOn) -> Link.Event {
        .disconnectionComplete(status: status, reason: reason, adapter: adapter)
    }

    static func restoring(_ reason: HCIStatus, attempts: Int = 0, _ step: Link.Step) -> Link.Phase {
        .restoring(Link.Restore(reason: reason, attempts: attempts, step: step))
    }

    static let disconnecting: [Link.Event] = [.disconnectRequested(ifRestoring: closeWhy)]
    /// A drop with the policy `twice`: the first attempt's timer armed (timer 7).
    static let backingOff: [Link.Event] = [complete(reason: failedToEstablish), .backoffArmed(7)]
    /// Then the first reconnect attempt running (task 9).
    static let attempting: [Link.Event] = backingOff + [.backoffEnded(adapter: .poweredOn), .attemptStarted(id: 1, 9)]

    static let rows: [Row] = [
        // disconnect() and Disconnection Complete.
        Row(name: "disconnect() sends HCI Disconnect", before: [], event: .disconnectRequested(ifRestoring: closeWhy),
            actions: [.stateChanged(.disconnecting(handle: handle)), .sendDisconnect(handle: handle)],
            after: .disconnecting(handle: handle, unanswered: 1, acknowledged: false)),
        Row(name: "the Command Status of HCI Disconnect with Success", before: disconnecting, event: .disconnectAcknowledged,
            actions: [], after: .disconnecting(handle: handle, unanswered: 0, acknowledged: true)),
        Row(name: "a second disconnect() while disconnecting asks again; both wait for one Disconnection Complete",
            before: disconnecting + [.disconnectAcknowledged], event: .disconnectRequested(ifRestoring: closeWhy),
            actions: [.sendDisconnect(handle: handle)], after: .disconnecting(handle: handle, unanswered: 1, acknowledged: true)),
        Row(name: "the second HCI Disconnect refused with Command Disallowed (0x0C) while the first is under way: the link stays disconnecting",
            before: disconnecting + [.disconnectAcknowledged, .disconnectRequested(ifRestoring: closeWhy)], event: .disconnectRefused(commandDisallowed),
            actions: [.ignored(.disconnectRefused(commandDisallowed))], after: .disconnecting(handle: handle, unanswered: 0, acknowledged: true)),
        Row(name: "a second disconnect() cancelled before it was sent leaves the first under way",
            before: disconnecting + [.disconnectRequested(ifRestoring: closeWhy)], event: .disconnectNotSent,
            actions: [], after: .disconnecting(handle: handle, unanswered: 1, acknowledged: false)),
        Row(name: "Disconnection Complete of ours closes the link", before: disconnecting + [.disconnectAcknowledged], event: complete(reason: localHostTerminated),
            actions: [.stateChanged(.closed(.disconnected(reason: localHostTerminated))), .emit(.disconnected(reason: localHostTerminated, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: localHostTerminated)],
            after: .closed(.disconnected(reason: localHostTerminated), reason: localHostTerminated)),
        Row(name: "Disconnect racing the peer's disconnection: the peer's reason, no restore although the policy would", policy: twice,
            before: disconnecting, event: complete(reason: remoteUserTerminated),
            actions: [.stateChanged(.closed(.disconnected(reason: remoteUserTerminated))), .emit(.disconnected(reason: remoteUserTerminated, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: remoteUserTerminated)],
            after: .closed(.disconnected(reason: remoteUserTerminated), reason: remoteUserTerminated)),
        Row(name: "the Command Status of a Disconnect that lost the race (0x02) after the link closed is a stray",
            before: disconnecting + [complete(reason: remoteUserTerminated)], event: .disconnectRefused(unknownConnection),
            actions: [.ignored(.disconnectRefused(unknownConnection))],
            after: .closed(.disconnected(reason: remoteUserTerminated), reason: remoteUserTerminated)),
        Row(name: "Disconnect refused with 0x02 before Disconnection Complete: nothing to wait for", before: disconnecting,
            event: .disconnectRefused(unknownConnection), actions: [.resumeDisconnectWaiters],
            after: .disconnecting(handle: handle, unanswered: 0, acknowledged: false)),
        Row(name: "Disconnect refused with Command Disallowed (0x0C): the link is up, the callers fail", before: disconnecting,
            event: .disconnectRefused(commandDisallowed),
            actions: [.stateChanged(.connected(handle: handle)), .failDisconnectWaiters(commandDisallowed)], after: .connected(handle: handle)),
        Row(name: "Disconnection Complete with an error status: the link is up, the callers fail", before: disconnecting + [.disconnectAcknowledged],
            event: complete(commandDisallowed, reason: localHostTerminated),
            actions: [.stateChanged(.connected(handle: handle)), .failDisconnectWaiters(commandDisallowed)], after: .connected(handle: handle)),
        Row(name: "Disconnection Complete with an error status while connected is a stray", before: [],
            event: complete(commandDisallowed, reason: localHostTerminated),
            actions: [.ignored(complete(commandDisallowed, reason: localHostTerminated))], after: .connected(handle: handle)),
        Row(name: "a second Disconnection Complete is a stray", before: disconnecting + [complete(reason: localHostTerminated)],
            event: complete(reason: localHostTerminated), actions: [.ignored(complete(reason: localHostTerminated))],
            after: .closed(.disconnected(reason: localHostTerminated), reason: localHostTerminated)),
        Row(name: "HCI Disconnect never sent (its caller was cancelled): the link is up as before", before: disconnecting,
            event: .disconnectNotSent, actions: [.stateChanged(.connected(handle: handle))], after: .connected(handle: handle)),
        Row(name: "HCI Disconnect not sent while connected is a stray", before: [],
            event: .disconnectNotSent, actions: [.ignored(.disconnectNotSent)], after: .connected(handle: handle)),

        // Drops.
        Row(name: "a drop (Connection Timeout 0x08) without a policy closes the link", before: [], event: complete(reason: connectionTimeout),
            actions: [.stateChanged(.closed(.disconnected(reason: connectionTimeout))), .emit(.disconnected(reason: connectionTimeout, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: connectionTimeout)],
            after: .closed(.disconnected(reason: connectionTimeout), reason: connectionTimeout)),
        Row(name: "Connection Failed to be Established (0x3E) with a policy: the restore waits 500 ms", policy: twice, before: [],
            event: complete(reason: failedToEstablish),
            actions: [.stateChanged(.reconnecting(attempt: 1)), .emit(.disconnected(reason: failedToEstablish, willReconnect: true)),
                      .scheduleAttempt(after: .milliseconds(500)), .emit(.reconnecting(attempt: 1, delay: .milliseconds(500))),
                      .resumeDisconnectWaiters, .failPendingWork(reason: failedToEstablish)],
            after: restoring(failedToEstablish, .backoff(nil))),
        Row(name: "a drop while the adapter is off closes the link whatever the policy", policy: twice, before: [],
            event: complete(reason: remoteUserTerminated, adapter: .poweredOff),
            actions: [.stateChanged(.closed(.disconnected(reason: remoteUserTerminated))), .emit(.disconnected(reason: remoteUserTerminated, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: remoteUserTerminated)],
            after: .closed(.disconnected(reason: remoteUserTerminated), reason: remoteUserTerminated)),
        Row(name: "a controller reset with a policy: the restore waits for the adapter", policy: twice, before: [],
            event: .controllerReset(reason: localHostTerminated),
            actions: [.stateChanged(.reconnecting(attempt: 1)), .emit(.disconnected(reason: localHostTerminated, willReconnect: true)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: localHostTerminated)],
            after: restoring(localHostTerminated, .waitingForAdapter)),
        Row(name: "the adapter powered on again: the first attempt is scheduled", policy: twice, before: [.controllerReset(reason: localHostTerminated)],
            event: .adapterPoweredOn,
            actions: [.scheduleAttempt(after: .milliseconds(500)), .emit(.reconnecting(attempt: 1, delay: .milliseconds(500)))],
            after: restoring(localHostTerminated, .backoff(nil))),
        Row(name: "a controller reset while disconnecting closes the link", policy: twice, before: disconnecting,
            event: .controllerReset(reason: localHostTerminated),
            actions: [.stateChanged(.closed(.disconnected(reason: localHostTerminated))), .emit(.disconnected(reason: localHostTerminated, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: localHostTerminated)],
            after: .closed(.disconnected(reason: localHostTerminated), reason: localHostTerminated)),
        Row(name: "the transport lost closes the link", before: [], event: .transportLost("read failed"),
            actions: [.stateChanged(.closed(.transportLost("read failed"))), .emit(.disconnected(reason: localHostTerminated, willReconnect: false)),
                      .resumeDisconnectWaiters, .failPendingWork(reason: localHostTerminated)],
            after: .closed(.transportLost("read failed"), reason: localHostTerminated)),

        // The restore.
        Row(name: "the timer armed is kept", policy: twice, before: [complete(reason: failedToEstablish)], event: .backoffArmed(7),
            actions: [], after: restoring(failedToEstablish, .backoff(7))),
        Row(name: "the delay passed: attempt 1 of the restore (attempt 2 of the link) starts", policy: twice, before: backingOff,
            event: .backoffEnded(adapter: .poweredOn),
            actions: [.stateChanged(.connecting(attempt: 2)), .emit(.connecting(attempt: 2)), .startAttempt(id: 1)],
            after: restoring(failedToEstablish, attempts: 1, .attempting(id: 1, nil))),
        Row(name: "the delay passed while the adapter is reset: the restore waits for it", policy: twice, before: backingOff,
            event: .backoffEnded(adapter: .resetting), actions: [], after: restoring(failedToEstablish, .waitingForAdapter)),
        Row(name: "the delay passed while the adapter is off: the restore ends", policy: twice, before: backingOff,
            event: .backoffEnded(adapter: .poweredOff),
            actions: [.stateChanged(.closed(.restoreEnded(attempts: 0, lastError: "the adapter is powered off"))),
                      .emit(.reconnectFailed(attempts: 0, lastError: "the adapter is powered off")), .resumeDisconnectWaiters],
            after: .closed(.restoreEnded(attempts: 0, lastError: "the adapter is powered off"), reason: failedToEstablish)),
        Row(name: "the attempt made the link: connected with its new handle", policy: twice, before: attempting,
            event: .attemptEnded(id: 1, .success(restored), adapter: .poweredOn),
            actions: [.linkRestored(restored), .stateChanged(.connected(handle: 0x0041)), .emit(.connected(handle: 0x0041, parameters: restored.parameters))],
            after: .connected(handle: 0x0041)),
        Row(name: "the attempt failed: the next waits 1,000 ms", policy: twice, before: attempting,
            event: .attemptEnded(id: 1, .failure(.failed(peer: LEAddress(.zero, type: .public), status: failedToEstablish)), adapter: .poweredOn),
            actions: [.scheduleAttempt(after: .milliseconds(1000)), .stateChanged(.reconnecting(attempt: 2)), .emit(.reconnecting(attempt: 2, delay: .milliseconds(1000)))],
            after: restoring(failedToEstablish, attempts: 1, .backoff(nil))),
        Row(name: "disconnect() while backing off ends the restore and stops its timer", policy: twice, before: backingOff,
            event: .disconnectRequested(ifRestoring: closeWhy),
            actions: [.cancelTimer(7), .stateChanged(.closed(.restoreEnded(attempts: 0, lastError: closeWhy))),
                      .emit(.reconnectFailed(attempts: 0, lastError: closeWhy)), .resumeDisconnectWaiters],
            after: .closed(.restoreEnded(attempts: 0, lastError: closeWhy), reason: failedToEstablish)),
        Row(name: "the central closed while an attempt runs: the attempt is cancelled", policy: twice, before: attempting,
            event: .restoreStopped(lastError: "closed"),
            actions: [.cancelAttempt(9), .stateChanged(.closed(.restoreEnded(attempts: 1, lastError: "closed"))),
                      .emit(.reconnectFailed(attempts: 1, lastError: "closed")), .resumeDisconnectWaiters],
            after: .closed(.restoreEnded(attempts: 1, lastError: "closed"), reason: failedToEstablish)),
        Row(name: "an attempt that made a link after its restore ended: the link is ended", policy: twice,
            before: attempting + [.restoreStopped(lastError: "closed")], event: .attemptEnded(id: 1, .success(restored), adapter: .poweredOn),
            actions: [.disconnectUnwanted(handle: 0x0041)],
            after: .closed(.restoreEnded(attempts: 1, lastError: "closed"), reason: failedToEstablish)),
        Row(name: "a controller reset during an attempt cancels it and waits for the adapter", policy: twice, before: attempting,
            event: .controllerReset(reason: localHostTerminated),
            actions: [.cancelAttempt(9), .stateChanged(.reconnecting(attempt: 2))],
            after: restoring(failedToEstablish, attempts: 1, .waitingForAdapter)),
        Row(name: "a second timer while one is armed is stopped", policy: twice, before: backingOff, event: .backoffArmed(8),
            actions: [.cancelTimer(8), .ignored(.backoffArmed(8))], after: restoring(failedToEstablish, .backoff(7))),
        Row(name: "the end of an older attempt is a stray", policy: twice, before: attempting,
            event: .attemptEnded(id: 0, .failure(.cancelled(peer: LEAddress(.zero, type: .public))), adapter: .poweredOn),
            actions: [.ignored(.attemptEnded(id: 0, .failure(.cancelled(peer: LEAddress(.zero, type: .public))), adapter: .poweredOn))],
            after: restoring(failedToEstablish, attempts: 1, .attempting(id: 1, 9))),
        Row(name: "disconnect() on a closed link is a stray", before: [complete(reason: connectionTimeout)],
            event: .disconnectRequested(ifRestoring: closeWhy), actions: [.ignored(.disconnectRequested(ifRestoring: closeWhy))],
            after: .closed(.disconnected(reason: connectionTimeout), reason: connectionTimeout)),
    ]

    @Test(arguments: rows) func row(_ row: Row) {
        var link = Link(handle: Self.handle, policy: row.policy)
        for event in row.before { _ = link.handle(event) }
        let actions = link.handle(row.event)
        #expect(actions == row.actions)
        #expect(link.phase == row.after)
    }

    /// The restore gives up after the policy's last attempt: two attempts, then `.reconnectFailed`.
    @Test func restoreGivesUpAfterThePolicysAttempts() {
        var link = Link(handle: Self.handle, policy: Self.twice)
        let failure = ConnectionError.failed(peer: LEAddress(.zero, type: .public), status: Self.failedToEstablish)
        for event in Self.attempting { _ = link.handle(event) }
        _ = link.handle(.attemptEnded(id: 1, .failure(failure), adapter: .poweredOn))
        _ = link.handle(.backoffArmed(8))
        #expect(link.handle(.backoffEnded(adapter: .poweredOn)) == [.stateChanged(.connecting(attempt: 3)), .emit(.connecting(attempt: 3)), .startAttempt(id: 2)])
        _ = link.handle(.attemptStarted(id: 2, 10))
        let end = link.handle(.attemptEnded(id: 2, .failure(failure), adapter: .poweredOn))
        let why = "\(failure)"
        #expect(end == [.stateChanged(.closed(.restoreEnded(attempts: 2, lastError: why))), .emit(.reconnectFailed(attempts: 2, lastError: why)), .resumeDisconnectWaiters])
        #expect(link.phase == .closed(.restoreEnded(attempts: 2, lastError: why), reason: Self.failedToEstablish))
    }

    /// Disconnection Complete decoded from its bytes (7.7.5: event code 0x05, length 4, Status
    /// 0x00, Connection_Handle 0x0040, Reason 0x13) drives the machine to `closed`.
    @Test func disconnectionCompleteFromTheWire() throws {
        let event = try HCIEvent(HCIEventPacket(code: 0x05, parameters: [0x00, 0x40, 0x00, 0x13]))
        guard case .disconnectionComplete(let e) = event else {
            Issue.record("decoded \(event)")
            return
        }
        var link = Link(handle: e.handle, policy: .never)
        _ = link.handle(.disconnectionComplete(status: e.status, reason: e.reason, adapter: .poweredOn))
        #expect(link.phase == .closed(.disconnected(reason: Self.remoteUserTerminated), reason: Self.remoteUserTerminated))
    }

    /// One Disconnection Complete from its bytes (7.7.5: event code 0x05, length 4, Status,
    /// Connection_Handle, Reason), taken by both sides of the link: the host's
    /// (`HCIFlowControl`: the link's queue, its channels, its buffers in the controller) and the
    /// connection's (`LinkLifecycle`). The host holds the link 0x0040 alone, with `inFlight`
    /// packets in the controller's 8 buffers.
    struct WireRow: Sendable, CustomTestStringConvertible {
        let name: String
        var policy = ReconnectPolicy.never
        let before: [Link.Event]
        let packet: [UInt8]
        let inFlight: Int
        let actions: [Link.Action]
        let after: Link.Phase
        let hostActions: [HCIFlowControl.Action]
        var testDescription: String { name }
    }

    static let hostEnds: [HCIFlowControl.Action] = [.failQueuedPDUs(handle: handle), .endChannels(handle: handle)]

    static let wireRows: [WireRow] = [
        WireRow(name: "05 04 00 40 00 13 while connected: the peer ended the link; its 2 buffers come back",
                before: [], packet: [0x05, 0x04, 0x00, 0x40, 0x00, 0x13], inFlight: 2,
                actions: [.stateChanged(.closed(.disconnected(reason: remoteUserTerminated))),
                          .emit(.disconnected(reason: remoteUserTerminated, willReconnect: false)),
                          .resumeDisconnectWaiters, .failPendingWork(reason: remoteUserTerminated)],
                after: .closed(.disconnected(reason: remoteUserTerminated), reason: remoteUserTerminated),
                hostActions: hostEnds + [.creditsReturned(handle: handle, count: 2)]),
        WireRow(name: "05 04 00 40 00 16 after our HCI Disconnect: closed, nothing in flight",
                before: disconnecting + [.disconnectAcknowledged], packet: [0x05, 0x04, 0x00, 0x40, 0x00, 0x16], inFlight: 0,
                actions: [.stateChanged(.closed(.disconnected(reason: localHostTerminated))),
                          .emit(.disconnected(reason: localHostTerminated, willReconnect: false)),
                          .resumeDisconnectWaiters, .failPendingWork(reason: localHostTerminated)],
                after: .closed(.disconnected(reason: localHostTerminated), reason: localHostTerminated),
                hostActions: hostEnds),
        WireRow(name: "05 04 00 40 00 08 (Connection Timeout) with a policy: the connection restores, the host ends the old link",
                policy: twice, before: [], packet: [0x05, 0x04, 0x00, 0x40, 0x00, 0x08], inFlight: 5,
                actions: [.stateChanged(.reconnecting(attempt: 1)), .emit(.disconnected(reason: connectionTimeout, willReconnect: true)),
                          .scheduleAttempt(after: .milliseconds(500)), .emit(.reconnecting(attempt: 1, delay: .milliseconds(500))),
                          .resumeDisconnectWaiters, .failPendingWork(reason: connectionTimeout)],
                after: restoring(connectionTimeout, .backoff(nil)),
                hostActions: hostEnds + [.creditsReturned(handle: handle, count: 5)]),
        WireRow(name: "05 04 0C 40 00 16 (Status Command Disallowed): the link is up on both sides, the disconnect() callers fail",
                before: disconnecting + [.disconnectAcknowledged], packet: [0x05, 0x04, 0x0C, 0x40, 0x00, 0x16], inFlight: 3,
                actions: [.stateChanged(.connected(handle: handle)), .failDisconnectWaiters(commandDisallowed)],
                after: .connected(handle: handle), hostActions: []),
    ]

    @Test(arguments: wireRows) func wireRow(_ row: WireRow) throws {
        guard case .event(let raw) = try HCIPacket(type: .event, body: row.packet),
              case .disconnectionComplete(let e) = try HCIEvent(raw) else {
            Issue.record("not a Disconnection Complete: \(row.packet)")
            return
        }
        #expect(e.handle == Self.handle)
        var link = Link(handle: Self.handle, policy: row.policy)
        for event in row.before { _ = link.handle(event) }
        #expect(link.handle(.disconnectionComplete(status: e.status, reason: e.reason, adapter: .poweredOn)) == row.actions)
        #expect(link.phase == row.after)

        var flow = HCIFlowControl(aclPacketLength: 27, aclPacketCount: 8, aclCredits: 8 - row.inFlight, inFlight: [Self.handle: row.inFlight])
        var hostActions: [HCIFlowControl.Action] = []
        for event in try HCIFlowControlTests.flowEvents(row.packet) { hostActions += flow.handle(event) }
        #expect(hostActions == row.hostActions)
        let ended = row.hostActions.isEmpty == false
        #expect(flow.aclCredits == (ended ? 8 : 8 - row.inFlight))
        #expect(flow.inFlight == (ended ? [:] : [Self.handle: row.inFlight]))
    }
}
