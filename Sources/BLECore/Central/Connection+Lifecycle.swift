import BLEWire

/// The driver of the link's machine (`LinkLifecycle`): every change of `lifecycle` goes
/// through `advance`, which carries out what the machine asks (emit the `ConnectionEvent`,
/// tell the link-state observers, arm the restore's timer, start its attempt task). The
/// central only routes HCI events here (Disconnection Complete, a controller reset, the
/// adapter powered on again, the transport's loss).
extension Connection {
    /// The machine of one link; its restore's timer and attempt task are the connection's.
    typealias Lifecycle = LinkLifecycle<any ScheduledTimer, Task<Void, Never>>

    /// Feeds the machine `event` and carries out its actions in order; returns them, so that
    /// `disconnect()` learns whether to send HCI Disconnect or wait for the one out already.
    @discardableResult
    func advance(_ event: Lifecycle.Event) -> [Lifecycle.Action] {
        let actions = lifecycle.handle(event)
        for action in actions { perform(action) }
        return actions
    }

    private func perform(_ action: Lifecycle.Action) {
        switch action {
        case .stateChanged(let state):
            if linkStateHistory.count == Self.linkStateHistoryLimit { linkStateHistory.removeFirst() }
            linkStateHistory.append(state)
            linkStateStream.yield(state)
            for observer in linkStateObservers { observer(state) }
            if case .closed = state { central?.assumeIsolated { $0.forget(self) } }
        case .emit(let event):
            emit(event)
        case .sendDisconnect:
            break  // the caller of disconnect() does it
        case .failPendingWork(let reason):
            linkSecurityEnded(reason: reason)
        case .resumeDisconnectWaiters:
            disconnectWaiters.resumeAll(with: .success(.ended))
        case .failDisconnectWaiters(let status):
            disconnectWaiters.resumeAll(with: .success(.refused(status)))
        case .scheduleAttempt(let delay):
            let timer = scheduler.schedule(after: delay) { [weak self] in
                self?.assumeIsolated { c in _ = c.advance(.backoffEnded(adapter: c.adapterState)) }
            }
            advance(.backoffArmed(timer))
        case .startAttempt(let id):
            startAttempt(id: id)
        case .cancelTimer(let timer):
            timer.cancel()
        case .cancelAttempt(let task):
            // Cancelling the task cancels its LE Create Connection at the controller.
            task.cancel()
        case .linkRestored(let link):
            parameters = link.parameters
            // The central registers the link and gives it this side's address on it.
            if let central {
                central.assumeIsolated { $0.linkRestored(self, handle: link.handle) }
            } else {
                ownLinkAddress = nil
            }
        case .disconnectUnwanted(let handle):
            central?.options.logger.log(.info, "disconnecting \(handle.hex) to \(peer): the connection was closed while it was being restored")
            host.background { _ = try? await $0.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
        case .ignored(let event):
            central?.options.logger.log(.debug, "link to \(peer): \(event.name) ignored while \(lifecycle.phase.state)")
        }
    }

    /// Disconnection Complete (7.7.5) for this link. `adapter` is the state of the adapter: a
    /// restore starts only while it is powered on, or waits for it while it is being reset.
    func disconnectionComplete(status: HCIStatus, reason: HCIStatus, adapter: AdapterState) {
        advance(.disconnectionComplete(status: status, reason: reason, adapter: adapter))
    }

    /// The controller was reset (a Hardware Error, or the adapter powered on again): the link
    /// is gone without a Disconnection Complete. A restore under way waits for the adapter.
    func controllerReset(reason: HCIStatus) {
        advance(.controllerReset(reason: reason))
    }

    /// The adapter is powered on again: a restore that waited for it goes on with the
    /// policy's delay for its next attempt.
    func adapterPoweredOn() {
        advance(.adapterPoweredOn)
    }

    /// The transport is gone: the link ends for good, whatever its state.
    func transportLost(_ why: String) {
        advance(.transportLost(why))
    }

    // MARK: - Attempts

    /// Starts reconnect attempt `id` as a task of the host's (`Central.close()` waits for it).
    private func startAttempt(id: UInt64) {
        guard let central else {
            advance(.attemptEnded(id: id, .failure(.adapterNotReady(.poweredOff)), adapter: .poweredOff))
            return
        }
        let timeout = connectTimeout, request = requestParameters
        let task = host.backgroundTask { [weak self, peer] _ in
            let result: Result<MadeLink, ConnectionError>
            do throws(ConnectionError) {
                let (handle, parameters) = try await central.establish(peer, timeout: timeout, parameters: request)
                result = .success(MadeLink(handle: handle, parameters: parameters))
            } catch {
                result = .failure(error)
            }
            await self?.attemptEnded(id: id, result)
        }
        advance(.attemptStarted(id: id, task))
    }

    /// The state of the central's adapter (`.poweredOff` once the central is gone).
    private nonisolated var adapterState: AdapterState { central?.facts.value.state ?? .poweredOff }

    private func attemptEnded(id: UInt64, _ result: Result<MadeLink, ConnectionError>) async {
        let actions = advance(.attemptEnded(id: id, result, adapter: adapterState))
        if actions.contains(where: { if case .linkRestored = $0 { true } else { false } }) { await runReconnectHooks() }
    }
}
