import BLEWire

/// The life of one link once its connect attempt (`ConnectAttempt`) handed it over with a
/// Connection_Handle, as a value: connected, HCI Disconnect going out (Vol 4, Part E, 7.1.6),
/// Disconnection Complete (7.7.5) of ours, of the peer's or with an error status, and the
/// reconnect policy's restore of a link that dropped, up to its end for good. It does no I/O:
/// `Connection` (Connection+Lifecycle.swift) feeds it what happened and carries out the
/// actions, in order. `Timer` names a restore's backoff timer and `Attempt` its running
/// reconnect attempt, so that the actions can stop them.
///
///     var link = LinkLifecycle<Int, Int>(handle: 0x0040, policy: .never)
///     let actions = link.handle(.disconnectRequested(ifRestoring: "closed"))  // [.stateChanged(.disconnecting(handle: 0x0040)), .sendDisconnect(handle: 0x0040)]
package struct LinkLifecycle<Timer: Sendable, Attempt: Sendable>: Sendable {
    /// What follows a drop the application did not ask for.
    package let policy: ReconnectPolicy
    package private(set) var phase: Phase
    /// Numbers the restore's attempts, so that the late end of an older one is told apart.
    package private(set) var attemptCounter: UInt64 = 0

    /// The link `handle` just made (LE Connection Complete, 7.7.65.1, or its enhanced form,
    /// 7.7.65.10, with status Success).
    package init(handle: UInt16, policy: ReconnectPolicy) {
        self.policy = policy
        self.phase = .connected(handle: handle)
    }

    package enum Phase: Sendable {
        case connected(handle: UInt16)
        /// HCI Disconnect for `handle` is going out or out; Disconnection Complete ends the link.
        /// `unanswered`: HCI Disconnects whose Command Status has not come; `acknowledged`: the
        /// controller took one (Command Status Success, 7.7.15).
        case disconnecting(handle: UInt16, unanswered: Int, acknowledged: Bool)
        /// Down; the reconnect policy restores it.
        case restoring(Restore)
        /// Ended for good; `reason` is the HCI reason of the last drop, when there was one.
        case closed(LinkClosure, reason: HCIStatus?)

        /// The state as `Connection.linkStates()` reports it.
        package var state: LinkState {
            switch self {
            case .connected(let h): return .connected(handle: h)
            case .disconnecting(let h, _, _): return .disconnecting(handle: h)
            case .restoring(let r):
                // The connect that made the link was attempt 1.
                if case .attempting = r.step { return .connecting(attempt: r.attempts + 1) }
                return .reconnecting(attempt: r.attempts + 1)
            case .closed(let why, _): return .closed(why)
            }
        }
    }

    /// A restore under way.
    package struct Restore: Sendable {
        /// Why the link dropped (the policy decides from it).
        package var reason: HCIStatus
        /// Reconnect attempts started since the drop.
        package var attempts = 0
        package var step: Step

        package init(reason: HCIStatus, attempts: Int = 0, step: Step) {
            self.reason = reason
            self.attempts = attempts
            self.step = step
        }
    }

    package enum Step: Sendable {
        /// The controller is being reset: attempts start once the adapter is powered on.
        case waitingForAdapter
        /// The policy's delay before attempt `attempts + 1`; nil until the timer is armed.
        case backoff(Timer?)
        /// Attempt `id` is pending; its task is nil until it runs.
        case attempting(id: UInt64, Attempt?)
    }

    package enum Event: Sendable {
        /// `disconnect()` or the central's close ends the link; a restore under way stops with
        /// `ifRestoring` as its last error.
        case disconnectRequested(ifRestoring: String)
        /// The HCI Disconnect asked for was never sent (its caller was cancelled first).
        case disconnectNotSent
        /// The Command Status of HCI Disconnect carried Success: Disconnection Complete follows.
        case disconnectAcknowledged
        /// The Command Status of HCI Disconnect carried `status` (7.1.6): Unknown Connection
        /// Identifier (0x02) when the controller has no such link any more.
        case disconnectRefused(HCIStatus)
        /// Disconnection Complete for the link's handle (7.7.5). `adapter` is the adapter's
        /// state: a restore starts only while it is powered on (or waits while it is reset).
        case disconnectionComplete(status: HCIStatus, reason: HCIStatus, adapter: AdapterState)
        /// The controller was reset (a Hardware Error, HCI_Reset): the link is gone without a
        /// Disconnection Complete.
        case controllerReset(reason: HCIStatus)
        /// The adapter is powered on again after a reset.
        case adapterPoweredOn
        /// The timer of `.scheduleAttempt` is armed.
        case backoffArmed(Timer)
        /// The policy's delay passed; `adapter` is the adapter's state now.
        case backoffEnded(adapter: AdapterState)
        /// The task of `.startAttempt(id)` runs.
        case attemptStarted(id: UInt64, Attempt)
        /// Reconnect attempt `id` ended with a link (its handle and parameters) or an error.
        case attemptEnded(id: UInt64, Result<MadeLink, ConnectionError>, adapter: AdapterState)
        /// The central is closed while the link is down: the restore stops.
        case restoreStopped(lastError: String)
        /// The transport to the controller is gone, and the link with it.
        case transportLost(String)
    }

    package enum Action: Sendable {
        /// The link's state changed: record it, tell the observers (and the central forgets a
        /// closed link).
        case stateChanged(LinkState)
        case emit(ConnectionEvent)
        /// Send HCI Disconnect for `handle`, feed its Command Status, then wait for
        /// Disconnection Complete.
        case sendDisconnect(handle: UInt16)
        /// The link is gone: fail its pending work (encryption) with `reason`.
        case failPendingWork(reason: HCIStatus)
        /// The callers of `disconnect()` return: the link ended (or will not come back).
        case resumeDisconnectWaiters
        /// The callers of `disconnect()` fail: the controller kept the link (`status`).
        case failDisconnectWaiters(HCIStatus)
        /// Arm a timer for `delay`, feed `.backoffArmed`, and `.backoffEnded` when it fires.
        case scheduleAttempt(after: Duration)
        /// Start reconnect attempt `id` and feed `.attemptStarted`, then `.attemptEnded`.
        case startAttempt(id: UInt64)
        case cancelTimer(Timer)
        /// Cancel the running attempt (its LE Create Connection is cancelled at the controller).
        case cancelAttempt(Attempt)
        /// A reconnect attempt made the link: take its handle and parameters, then run the
        /// reconnect hooks.
        case linkRestored(MadeLink)
        /// A link made by an attempt whose restore ended meanwhile: end it (HCI Disconnect).
        case disconnectUnwanted(handle: UInt16)
        /// An event with nothing to do in this phase (log it).
        case ignored(Event)
    }

    /// Takes one event; returns what the connection must do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch (event, phase) {
        // Connected and disconnecting.
        case (.disconnectRequested, .connected(let h)):
            return enter(.disconnecting(handle: h, unanswered: 1, acknowledged: false)) + [.sendDisconnect(handle: h)]
        case (.disconnectRequested, .disconnecting(let h, let unanswered, let acknowledged)):
            // A second disconnect() asks again (the first one's Disconnection Complete may be
            // lost); every caller waits for the one Disconnection Complete.
            phase = .disconnecting(handle: h, unanswered: unanswered + 1, acknowledged: acknowledged)
            return [.sendDisconnect(handle: h)]
        case (.disconnectAcknowledged, .disconnecting(let h, let unanswered, _)):
            phase = .disconnecting(handle: h, unanswered: max(0, unanswered - 1), acknowledged: true)
            return []
        case (.disconnectNotSent, .disconnecting(let h, let unanswered, let acknowledged)):
            if unanswered <= 1 && !acknowledged { return enter(.connected(handle: h)) }
            // Another HCI Disconnect is out: its Disconnection Complete ends the link.
            phase = .disconnecting(handle: h, unanswered: max(0, unanswered - 1), acknowledged: acknowledged)
            return []
        case (.disconnectRefused(let status), .disconnecting(let h, let unanswered, let acknowledged)):
            if status == .unknownConnectionIdentifier {
                // The controller has no such link: its Disconnection Complete is on its way (or
                // the link ended without one): nothing to wait for.
                phase = .disconnecting(handle: h, unanswered: max(0, unanswered - 1), acknowledged: acknowledged)
                return [.resumeDisconnectWaiters]
            }
            if unanswered <= 1 && !acknowledged { return enter(.connected(handle: h)) + [.failDisconnectWaiters(status)] }
            // Another HCI Disconnect is out or was taken (a second one refused with Command
            // Disallowed while the first is under way): its Disconnection Complete ends the link.
            phase = .disconnecting(handle: h, unanswered: max(0, unanswered - 1), acknowledged: acknowledged)
            return [.ignored(event)]
        case (.disconnectionComplete(.success, let reason, let adapter), .connected):
            return dropped(reason: reason, adapter: adapter, asked: false)
        case (.disconnectionComplete(.success, let reason, _), .disconnecting):
            // Ours, or the peer's racing ours (its reason wins): no restore follows.
            return dropped(reason: reason, adapter: .poweredOn, asked: true)
        case (.disconnectionComplete(let status, _, _), .disconnecting(let h, _, _)):
            // 7.7.5: a Status other than Success means the disconnection failed; the link is up.
            return enter(.connected(handle: h)) + [.failDisconnectWaiters(status)]
        case (.controllerReset(let reason), .connected):
            return dropped(reason: reason, adapter: .resetting, asked: false)
        case (.controllerReset(let reason), .disconnecting):
            return dropped(reason: reason, adapter: .resetting, asked: true)
        case (.transportLost(let why), .connected), (.transportLost(let why), .disconnecting):
            let reason = HCIStatus.connectionTerminatedByLocalHost
            return enter(.closed(.transportLost(why), reason: reason))
                + [.emit(.disconnected(reason: reason, willReconnect: false)), .resumeDisconnectWaiters, .failPendingWork(reason: reason)]

        // Restoring.
        case (.disconnectRequested(let why), .restoring), (.restoreStopped(let why), .restoring):
            return endRestore(lastError: why)
        case (.transportLost(let why), .restoring):
            return endRestore(lastError: "transport lost: \(why)")
        case (.controllerReset, .restoring(var r)):
            let stop = cancel(r.step)
            r.step = .waitingForAdapter
            return stop + enter(.restoring(r))
        case (.adapterPoweredOn, .restoring(let r)):
            guard case .waitingForAdapter = r.step else { return [.ignored(event)] }
            guard let delay = policy.delay(reason: r.reason, attempt: r.attempts + 1) else {
                return endRestore(lastError: "the policy allows no further attempt after the controller reset")
            }
            return scheduleAttempt(r, after: delay)
        case (.backoffArmed(let timer), .restoring(var r)):
            guard case .backoff(nil) = r.step else { return [.cancelTimer(timer), .ignored(event)] }
            r.step = .backoff(timer)
            phase = .restoring(r)
            return []
        case (.backoffEnded(let adapter), .restoring(var r)):
            guard case .backoff = r.step else { return [.ignored(event)] }
            // The timer fired: nothing left to stop.
            r.step = .backoff(nil)
            phase = .restoring(r)
            guard adapter == .poweredOn else {
                if adapter == .resetting {
                    r.step = .waitingForAdapter
                    return enter(.restoring(r))
                }
                return endRestore(lastError: "the adapter is \(adapter)")
            }
            r.attempts += 1
            attemptCounter &+= 1
            r.step = .attempting(id: attemptCounter, nil)
            return enter(.restoring(r)) + [.emit(.connecting(attempt: r.attempts + 1)), .startAttempt(id: attemptCounter)]
        case (.attemptStarted(let id, let task), .restoring(var r)):
            guard case .attempting(id, nil) = r.step else { return [.cancelAttempt(task), .ignored(event)] }
            r.step = .attempting(id: id, task)
            phase = .restoring(r)
            return []
        case (.attemptEnded(let id, let result, let adapter), .restoring(var r)):
            guard case .attempting(id, _) = r.step else { return unwanted(event) }
            // The attempt's task is over: nothing left to cancel.
            r.step = .attempting(id: id, nil)
            phase = .restoring(r)
            switch result {
            case .success(let link):
                return [.linkRestored(link)] + enter(.connected(handle: link.handle))
                    + [.emit(.connected(handle: link.handle, parameters: link.parameters))]
            case .failure(let error):
                if adapter == .resetting {
                    r.step = .waitingForAdapter
                    return enter(.restoring(r))
                }
                if adapter == .poweredOn, let delay = policy.delay(reason: r.reason, attempt: r.attempts + 1) {
                    return scheduleAttempt(r, after: delay)
                }
                return endRestore(lastError: "\(error)")
            }
        case (.attemptEnded, _):
            // The restore ended (disconnect(), the adapter's loss) while this attempt completed:
            // so does the link it made.
            return unwanted(event)

        // Closed.
        case (.transportLost, .closed):
            return [.resumeDisconnectWaiters]
        default:
            // A stray: a second Disconnection Complete, a refusal after the link went down
            // (HCI Disconnect racing the peer's), a reset of a link already closed...
            return [.ignored(event)]
        }
    }

    // MARK: - Transitions

    /// Moves to `new`; a state change for the observers when the reported state differs.
    private mutating func enter(_ new: Phase) -> [Action] {
        let old = phase.state
        phase = new
        return new.state == old ? [] : [.stateChanged(new.state)]
    }

    /// The link went down with `reason`. A restore follows when the application did not ask
    /// for it, the adapter is up (or being reset) and the policy gives a delay.
    private mutating func dropped(reason: HCIStatus, adapter: AdapterState, asked: Bool) -> [Action] {
        let restores = !asked && (adapter == .poweredOn || adapter == .resetting)
        var actions: [Action]
        if restores, let delay = policy.delay(reason: reason, attempt: 1) {
            let restore = Restore(reason: reason, step: .waitingForAdapter)
            actions = enter(.restoring(restore)) + [.emit(.disconnected(reason: reason, willReconnect: true))]
            if adapter == .poweredOn { actions += scheduleAttempt(restore, after: delay) }
        } else {
            actions = enter(.closed(.disconnected(reason: reason), reason: reason)) + [.emit(.disconnected(reason: reason, willReconnect: false))]
        }
        return actions + [.resumeDisconnectWaiters, .failPendingWork(reason: reason)]
    }

    private mutating func scheduleAttempt(_ restore: Restore, after delay: Duration) -> [Action] {
        var r = restore
        r.step = .backoff(nil)
        return [.scheduleAttempt(after: delay)] + enter(.restoring(r)) + [.emit(.reconnecting(attempt: r.attempts + 1, delay: delay))]
    }

    /// The restore stops for good (`.reconnectFailed`, once per outage).
    private mutating func endRestore(lastError: String) -> [Action] {
        guard case .restoring(let r) = phase else { return [] }
        return cancel(r.step) + enter(.closed(.restoreEnded(attempts: r.attempts, lastError: lastError), reason: r.reason))
            + [.emit(.reconnectFailed(attempts: r.attempts, lastError: lastError)), .resumeDisconnectWaiters]
    }

    private func cancel(_ step: Step) -> [Action] {
        switch step {
        case .backoff(let timer?): return [.cancelTimer(timer)]
        case .attempting(_, let task?): return [.cancelAttempt(task)]
        case .waitingForAdapter, .backoff(nil), .attempting(_, nil): return []
        }
    }

    /// An attempt ended that no restore waits for: a link it made is ended.
    private func unwanted(_ event: Event) -> [Action] {
        if case .attemptEnded(_, .success(let link), _) = event { return [.disconnectUnwanted(handle: link.handle)] }
        return [.ignored(event)]
    }
}

extension LinkLifecycle.Event {
    /// The event's name for a log line.
    package var name: String {
        switch self {
        case .disconnectRequested: return "disconnect requested"
        case .disconnectNotSent: return "HCI Disconnect not sent"
        case .disconnectAcknowledged: return "HCI Disconnect acknowledged"
        case .disconnectRefused(let status): return "HCI Disconnect refused (\(status))"
        case .disconnectionComplete(let status, let reason, _): return "Disconnection Complete (status \(status), reason \(reason))"
        case .controllerReset(let reason): return "controller reset (\(reason))"
        case .adapterPoweredOn: return "adapter powered on"
        case .backoffArmed: return "reconnect timer armed"
        case .backoffEnded: return "reconnect delay passed"
        case .attemptStarted(let id, _): return "reconnect attempt \(id) started"
        case .attemptEnded(let id, _, _): return "reconnect attempt \(id) ended"
        case .restoreStopped: return "restore stopped"
        case .transportLost(let why): return "transport lost (\(why))"
        }
    }
}

extension LinkLifecycle.Step: Equatable where Timer: Equatable, Attempt: Equatable {}
extension LinkLifecycle.Restore: Equatable where Timer: Equatable, Attempt: Equatable {}
extension LinkLifecycle.Phase: Equatable where Timer: Equatable, Attempt: Equatable {}
extension LinkLifecycle.Event: Equatable where Timer: Equatable, Attempt: Equatable {}
extension LinkLifecycle.Action: Equatable where Timer: Equatable, Attempt: Equatable {}
