import BLEWire

/// The link state machine: every change of `lifecycle` happens in this file, and each one
/// emits its `ConnectionEvent` and tells the link-state observers. The central only routes
/// HCI events here (Disconnection Complete, a completed reconnect attempt, a controller
/// reset, the adapter powered on again); the restore's timer and attempt task belong to the
/// connection.
extension Connection {
    /// The state of one link, with what each state needs.
    enum Lifecycle {
        case connected(handle: UInt16)
        /// `disconnect()` sent (or is sending) HCI Disconnect for `handle`.
        case disconnecting(handle: UInt16)
        /// Down; the reconnect policy restores it.
        case restoring(Restore)
        /// Ended for good; `reason` is the HCI reason of the last drop, when there was one.
        case closed(LinkClosure, reason: HCIStatus?)

        var state: LinkState {
            switch self {
            case .connected(let h): return .connected(handle: h)
            case .disconnecting(let h): return .disconnecting(handle: h)
            case .restoring(let r):
                if case .attempting = r.step { return .connecting(attempt: r.attempts + 1) }
                return .reconnecting(attempt: r.attempts + 1)
            case .closed(let why, _): return .closed(why)
            }
        }
    }

    /// A restore under way.
    struct Restore {
        /// Why the link dropped (the policy decides from it).
        var reason: HCIStatus
        /// Reconnect attempts started since the drop.
        var attempts = 0
        var step: Step

        enum Step {
            /// The controller is being reset: attempts start once the adapter is powered on.
            case waitingForAdapter
            /// The policy's delay before attempt `attempts + 1`.
            case backoff(any ScheduledTimer)
            /// Attempt `attempts` is pending; `id` tells its task from an older one.
            case attempting(id: UInt64, Task<Void, Never>)
        }
    }

    // MARK: - Transitions

    private func transition(to new: Lifecycle) {
        let old = lifecycle.state
        lifecycle = new
        let state = new.state
        guard state != old else { return }
        if linkStateHistory.count == Self.linkStateHistoryLimit { linkStateHistory.removeFirst() }
        linkStateHistory.append(state)
        linkStateStream.yield(state)
        for observer in linkStateObservers { observer(state) }
        if case .closed = new { central?.enter(on: executor) { $0.forget(self) } }
    }

    /// `disconnect()` is about to send HCI Disconnect: no restore follows the drop.
    func startDisconnecting(_ handle: UInt16) {
        transition(to: .disconnecting(handle: handle))
    }

    /// The HCI Disconnect was never sent (its caller was cancelled first): the link is up as before.
    func disconnectNotSent(_ handle: UInt16) {
        if case .disconnecting(handle) = lifecycle { transition(to: .connected(handle: handle)) }
    }

    /// Disconnection Complete (or a controller reset) ended the link. `adapter` is the state
    /// of the adapter: a restore starts only while it is powered on, or waits for it while it
    /// is being reset.
    func linkDropped(reason: HCIStatus, adapter: AdapterState) {
        let wasClosing: Bool
        switch lifecycle {
        case .connected: wasClosing = false
        case .disconnecting: wasClosing = true
        case .restoring, .closed: return
        }
        let delay = wasClosing || (adapter != .poweredOn && adapter != .resetting) ? nil : reconnectPolicy.delay(reason: reason, attempt: 1)
        if let delay {
            let restore = Restore(reason: reason, step: .waitingForAdapter)
            transition(to: .restoring(restore))
            emit(.disconnected(reason: reason, willReconnect: true))
            if adapter == .poweredOn { scheduleAttempt(after: delay) }
        } else {
            transition(to: .closed(.disconnected(reason: reason), reason: reason))
            emit(.disconnected(reason: reason, willReconnect: false))
        }
        disconnectWaiters.resumeAll(with: .success(true))
        linkSecurityEnded(reason: reason)
    }

    /// The controller was reset (a Hardware Error, or the adapter powered on again): the link
    /// is gone without a Disconnection Complete. A restore under way waits for the adapter.
    func controllerReset(reason: HCIStatus) {
        switch lifecycle {
        case .connected, .disconnecting:
            linkDropped(reason: reason, adapter: .resetting)
        case .restoring(var r):
            cancelStep(r.step)
            r.step = .waitingForAdapter
            transition(to: .restoring(r))
        case .closed:
            break
        }
    }

    /// The adapter is powered on again: a restore that waited for it goes on with the
    /// policy's delay for its next attempt.
    func adapterPoweredOn() {
        guard case .restoring(let r) = lifecycle, case .waitingForAdapter = r.step else { return }
        guard let delay = reconnectPolicy.delay(reason: r.reason, attempt: r.attempts + 1) else {
            return endRestore(lastError: "the policy allows no further attempt after the controller reset")
        }
        scheduleAttempt(after: delay)
    }

    /// The restore stops for good (`.reconnectFailed`, once per outage); a link that is up
    /// is not affected.
    func endRestore(lastError: String) {
        guard case .restoring(let r) = lifecycle else { return }
        cancelStep(r.step)
        transition(to: .closed(.restoreEnded(attempts: r.attempts, lastError: lastError), reason: r.reason))
        emit(.reconnectFailed(attempts: r.attempts, lastError: lastError))
        disconnectWaiters.resumeAll(with: .success(true))
    }

    /// The transport is gone: the link ends for good, whatever its state.
    func transportLost(_ why: String) {
        switch lifecycle {
        case .connected, .disconnecting:
            let reason = HCIStatus.connectionTerminatedByLocalHost
            transition(to: .closed(.transportLost(why), reason: reason))
            emit(.disconnected(reason: reason, willReconnect: false))
            disconnectWaiters.resumeAll(with: .success(true))
            linkSecurityEnded(reason: reason)
        case .restoring:
            endRestore(lastError: "transport lost: \(why)")
        case .closed:
            disconnectWaiters.resumeAll(with: .success(true))
        }
    }

    // MARK: - Attempts

    private func scheduleAttempt(after delay: Duration) {
        guard case .restoring(var r) = lifecycle else { return }
        let attempt = r.attempts + 1
        let timer = scheduler.schedule(after: delay) { [weak self, executor] in
            self?.enter(on: executor) { $0.startAttempt() }
        }
        r.step = .backoff(timer)
        transition(to: .restoring(r))
        emit(.reconnecting(attempt: attempt, delay: delay))
    }

    private func startAttempt() {
        guard case .restoring(var r) = lifecycle, case .backoff = r.step else { return }
        let adapter = central?.enter(on: executor) { $0.state } ?? .poweredOff
        guard let central, adapter == .poweredOn else {
            if adapter == .resetting {
                r.step = .waitingForAdapter
                return transition(to: .restoring(r))
            }
            return endRestore(lastError: "the adapter is \(adapter)")
        }
        r.attempts += 1
        attemptCounter &+= 1
        let id = attemptCounter
        let timeout = connectTimeout, request = requestParameters, peer = self.peer
        // A task of the host's: `Central.close()` waits for it.
        let task = host.enter(on: executor) { $0.backgroundTask { [weak self] _ in
            let result: Result<(UInt16, ConnectionParameters), ConnectionError>
            do throws(ConnectionError) {
                result = .success(try await central.establish(peer, timeout: timeout, parameters: request))
            } catch {
                result = .failure(error)
            }
            await self?.attemptEnded(id: id, result)
        } }
        r.step = .attempting(id: id, task)
        transition(to: .restoring(r))
        emit(.connecting(attempt: r.attempts + 1))
    }

    private func attemptEnded(id: UInt64, _ result: Result<(UInt16, ConnectionParameters), ConnectionError>) async {
        guard case .restoring(var r) = lifecycle, case .attempting(id, _) = r.step else {
            // The restore ended (disconnect(), the adapter's loss) while this attempt completed:
            // so does the new link.
            if case .success((let handle, _)) = result {
                central?.options.logger.log(.info, "disconnecting \(handle.hex) to \(peer): the connection was closed while it was being restored")
                host.enter(on: executor) { $0.background { _ = try? await $0.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) } }
            }
            return
        }
        switch result {
        case .success((let handle, let parameters)):
            self.parameters = parameters
            central?.enter(on: executor) { $0.linkRestored(self, handle: handle) }
            ownLinkAddress = central?.enter(on: executor) { $0.linkOwnAddress(handle: handle) }
            transition(to: .connected(handle: handle))
            emit(.connected(handle: handle, parameters: parameters))
            await runReconnectHooks()
        case .failure(let error):
            let adapter = central?.enter(on: executor) { $0.state } ?? .poweredOff
            if adapter == .resetting {
                r.step = .waitingForAdapter
                transition(to: .restoring(r))
            } else if adapter == .poweredOn, let delay = reconnectPolicy.delay(reason: r.reason, attempt: r.attempts + 1) {
                r.step = .waitingForAdapter
                transition(to: .restoring(r))
                scheduleAttempt(after: delay)
            } else {
                endRestore(lastError: "\(error)")
            }
        }
    }

    private func cancelStep(_ step: Restore.Step) {
        switch step {
        case .waitingForAdapter: break
        case .backoff(let timer): timer.cancel()
        // Cancelling the task cancels its LE Create Connection at the controller.
        case .attempting(_, let task): task.cancel()
        }
    }
}
