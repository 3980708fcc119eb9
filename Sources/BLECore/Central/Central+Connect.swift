/// Connecting: one LE Create Connection at a time, timeout and cancellation done properly
/// (LE Create Connection Cancel, then the completion with status 0x02), and reconnection.
extension Central {
    /// What a connection attempt ends with.
    typealias ConnectResult = Result<(UInt16, ConnectionParameters), ConnectionError>
    /// What the caller's wait ends with: the result, and whether the caller left the attempt
    /// (cancelled) so that it ends in the background and releases the connect turn itself.
    typealias ConnectWaitOutcome = (result: ConnectResult, handedOff: Bool)

    struct PendingConnect {
        let peer: LEAddress
        /// The caller in `connectWaiters`, while it waits for the completion.
        var waiter: Waiters<ConnectWaitOutcome, Never>.ID?
        var timer: (any ScheduledTimer)?
        /// Set once the attempt is being cancelled: the error to report when it ends.
        var abortError: ConnectionError?
        /// The completion, when it arrived before the caller started waiting (a fast
        /// controller can send it right behind the Command Status).
        var early: ConnectResult?
        /// The caller was cancelled and has returned: the attempt is being cancelled at the
        /// controller and ends without it, releasing the connect turn then.
        var callerGone = false
        /// The scan was paused for this attempt: it resumes when the attempt ends.
        var pausedScan = false

        init(peer: LEAddress) { self.peer = peer }
    }

    /// Connects to `peer`. One attempt is pending at the controller at a time; others queue.
    /// On timeout the attempt is cancelled at the controller. Cancelling the calling task
    /// throws `.cancelled` at once; an attempt already sent is cancelled at the controller
    /// (LE Create Connection Cancel) in the background, and the next attempt waits for it.
    /// With a reconnect policy, an unexpected drop is followed by new attempts and the returned
    /// `Connection` carries on.
    ///
    ///     let link = try await central.connect(peer, timeout: .seconds(10), reconnect: .always(maxAttempts: 5))
    public func connect(
        _ peer: LEAddress,
        timeout: Duration = .seconds(15),
        reconnect: ReconnectPolicy = .never,
        parameters: ConnectionRequestParameters = .default
    ) async throws(ConnectionError) -> Connection {
        guard state == .poweredOn else { throw .adapterNotReady(state) }
        if let existing = connectionsByPeer[peer], existing.enter(on: executor, { $0.isConnected }) { return existing }
        connectionEventStream.yield(PeerConnectionEvent(peer: peer, event: .connecting(attempt: 1)))
        let (handle, params) = try await establish(peer, timeout: timeout, parameters: parameters)
        let connection = Connection(central: self, host: host, peer: peer, handle: handle, parameters: params, policy: reconnect, request: parameters)
        connectionsByPeer[peer] = connection
        connectionsByHandle[handle] = connection
        connection.enter(on: executor) { $0.emit(.connected(handle: handle, parameters: params)) }
        startLinkSetup(connection, handle: handle, parameters: parameters)
        return connection
    }

    /// Creates the link and waits for LE (Enhanced) Connection Complete. The connect turn is
    /// held from here until the attempt has ended at the controller: it is released here, or,
    /// when the caller was cancelled after the create command went out, once the cancelled
    /// attempt completed (`finishPendingConnect`).
    func establish(_ peer: LEAddress, timeout: Duration, parameters: ConnectionRequestParameters) async throws(ConnectionError) -> (UInt16, ConnectionParameters) {
        try await acquireConnectTurn(peer)
        var pausedScan = false
        var sent = false
        while !sent {
            if Task.isCancelled {
                endConnectAttempt(peer, pausedScan: pausedScan)
                throw .cancelled(peer: peer)
            }
            // Registered before the command goes out so that a completion arriving in the same
            // read as the Command Status finds its attempt.
            pendingConnect = PendingConnect(peer: peer)
            pendingConnect?.pausedScan = pausedScan
            do throws(HCIError) {
                try await host.send(createConnectionCommand(peer, parameters))
                sent = true
            } catch {
                if case .cancelledAfterSending = error {
                    // The controller has the attempt: it is cancelled there, without the caller.
                    handOffPendingConnect(peer, pausedScan: pausedScan)
                    throw .cancelled(peer: peer)
                }
                pendingConnect = nil
                if case .commandFailed(_, .commandDisallowed) = error, !pausedScan, scanner.enter(on: executor, { $0.isScanning }) {
                    options.logger.log(.info, "the controller cannot scan and initiate at once: pausing the scan to connect to \(peer)")
                    await scanner.pause()
                    pausedScan = true
                    continue
                }
                endConnectAttempt(peer, pausedScan: pausedScan)
                if case .cancelled = error { throw .cancelled(peer: peer) }
                if case .commandFailed(_, let status) = error { throw .failed(peer: peer, status: status) }
                throw .command(peer: peer, error)
            }
        }
        if let early = pendingConnect?.early {
            pendingConnect = nil
            endConnectAttempt(peer, pausedScan: pausedScan)
            return try early.get()
        }
        if pendingConnect == nil { pendingConnect = PendingConnect(peer: peer) }
        let outcome = await connectWaiters.wait(cancelled: { [weak self, executor] _ in
            let handedOff = self?.enter(on: executor) { $0.connectCallerCancelled() } ?? false
            return .success((.failure(.cancelled(peer: peer)), handedOff))
        }) { id in
            pendingConnect?.waiter = id
            let ms = Int(timeout.nanoseconds / 1_000_000)
            pendingConnect?.timer = scheduler.schedule(after: timeout) { [weak self, executor] in
                self?.enter(on: executor) { $0.abortPendingConnect(.timeout(peer: peer, milliseconds: ms)) }
            }
        }.get()
        if !outcome.handedOff { endConnectAttempt(peer, pausedScan: pausedScan) }
        return try outcome.result.get()
    }

    func createConnectionCommand(_ peer: LEAddress, _ p: ConnectionRequestParameters) -> HCICommandPacket {
        let useExtended = controllerInfo?.supportsExtendedCreateConnection ?? false
        if useExtended {
            return HCICommand.leExtendedCreateConnection(HCICommand.LEExtendedCreateConnection(peer: peer, request: p))
        }
        return HCICommand.leCreateConnection(HCICommand.LECreateConnection(peer: peer, request: p))
    }

    /// The caller waiting for the pending attempt was cancelled: it gets `.cancelled` now,
    /// and the attempt is cancelled at the controller without it (true: it was handed off).
    func connectCallerCancelled() -> Bool {
        guard var pending = pendingConnect, !pending.callerGone else { return false }
        pending.waiter = nil
        pending.callerGone = true
        pendingConnect = pending
        abortPendingConnect(.cancelled(peer: pending.peer))
        return true
    }

    /// The caller was cancelled after the create command went out, before its Command
    /// Status: the attempt is cancelled at the controller without it (or, when it already
    /// completed, ended here).
    func handOffPendingConnect(_ peer: LEAddress, pausedScan: Bool) {
        guard var pending = pendingConnect else { return endConnectAttempt(peer, pausedScan: pausedScan) }
        if let early = pending.early {
            pendingConnect = nil
            if case .success((let handle, _)) = early {
                options.logger.log(.info, "disconnecting \(handle.hex) to \(pending.peer): its connect call was cancelled")
                let host = self.host
                Task { try? await host.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
            }
            endConnectAttempt(pending.peer, pausedScan: pending.pausedScan)
            return
        }
        pending.callerGone = true
        pendingConnect = pending
        abortPendingConnect(.cancelled(peer: pending.peer))
    }

    /// Timeout or cancellation: LE Create Connection Cancel, then wait (bounded) for the
    /// completion with Unknown Connection Identifier (0x02).
    func abortPendingConnect(_ error: ConnectionError) {
        guard var pending = pendingConnect, pending.waiter != nil || pending.callerGone,
              pending.abortError == nil, pending.early == nil else { return }
        pending.timer?.cancel()
        pending.abortError = error
        let peer = pending.peer
        let waitLimit = options.connectCancelTimeout
        pending.timer = scheduler.schedule(after: waitLimit) { [weak self, executor] in
            self?.enter(on: executor) { central in
                central.options.logger.log(.warning, "the controller never completed the cancelled connection attempt to \(peer) within \(Int(waitLimit.nanoseconds / 1_000_000)) ms; giving up on it")
                central.finishPendingConnect(.failure(error))
            }
        }
        pendingConnect = pending
        let host = self.host
        Task { [weak self] in
            do {
                try await host.send(HCICommand.leCreateConnectionCancel())
            } catch {
                // Command Disallowed: no attempt is pending any more (the completion is on its way).
                self?.options.logger.log(.info, "LE Create Connection Cancel: \(error)")
            }
        }
    }

    /// The pending attempt ended with `result`: its caller gets it (or keeps it until it
    /// waits); an attempt its caller left releases the connect turn.
    func finishPendingConnect(_ result: ConnectResult) {
        guard let pending = pendingConnect else { return }
        if pending.callerGone {
            pending.timer?.cancel()
            pendingConnect = nil
            endConnectAttempt(pending.peer, pausedScan: pending.pausedScan)
            return
        }
        guard let waiter = pending.waiter else {
            if pending.early == nil { pendingConnect?.early = result }
            return
        }
        pending.timer?.cancel()
        pendingConnect = nil
        connectWaiters.resume(waiter, with: .success((result, false)))
    }

    func failPendingConnect(_ error: ConnectionError) {
        finishPendingConnect(.failure(error))
    }

    /// The attempt is over at the controller: the next one may start, and a scan paused for
    /// it runs again.
    func endConnectAttempt(_ peer: LEAddress, pausedScan: Bool) {
        if pausedScan {
            options.logger.log(.info, "resuming the scan paused for the connection to \(peer)")
            let scanner = self.scanner
            Task { await scanner.resume() }
        }
        releaseConnectTurn()
    }

    /// Waits for the one connect turn; a cancelled caller leaves the queue at once.
    func acquireConnectTurn(_ peer: LEAddress) async throws(ConnectionError) {
        if Task.isCancelled { throw .cancelled(peer: peer) }
        if !connectBusy {
            connectBusy = true
            return
        }
        let granted = await connectTurns.wait(cancelled: { _ in .success(false) }).get()
        if !granted { throw .cancelled(peer: peer) }
    }

    func releaseConnectTurn() {
        if !connectTurns.resumeFirst(with: .success(true)) { connectBusy = false }
    }

    // MARK: - Link events

    /// LE Connection Complete / Enhanced Connection Complete (v1, v2).
    func connectionCompleted(status: HCIStatus, handle: UInt16, role: UInt8, peer: LEAddress?, parameters: ConnectionParameters) {
        guard status == .success else {
            if let pending = pendingConnect {
                finishPendingConnect(.failure(pending.abortError ?? .failed(peer: pending.peer, status: status)))
            }
            return
        }
        let peerAddress = peer ?? LEAddress(.zero, type: .public)
        // On a kernel-owned adapter (hci-raw) a link this central did not ask for is the
        // kernel's: the host leaves it alone (no link, nothing ever sent on it).
        if options.resetController == false, role != 0x00 || pendingConnect?.peer.address != peerAddress.address {
            options.logger.log(.debug, "connection \(handle.hex) to \(peerAddress) belongs to the kernel; leaving it alone")
            host.enter(on: executor) { $0.addForeignLink(handle: handle) }
            return
        }
        // Register the link before anything else so its first ACL packet finds it.
        host.enter(on: executor) { $0.addLink(handle: handle, peer: peerAddress) }
        guard role == 0x00, let pending = pendingConnect, pending.abortError == nil else {
            // A connection nobody waits for (an attempt that completed while being cancelled,
            // or one we did not initiate): end it.
            if let pending = pendingConnect, let abort = pending.abortError {
                finishPendingConnect(.failure(abort))
            }
            options.logger.log(.info, "disconnecting unexpected connection \(handle.hex) to \(peerAddress)")
            let host = self.host
            Task { try? await host.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
            return
        }
        finishPendingConnect(.success((handle, parameters)))
    }

    func disconnected(handle: UInt16, reason: HCIStatus) {
        guard let connection = connectionsByHandle.removeValue(forKey: handle) else { return }
        let (peer, local, policy) = connection.enter(on: executor) { ($0.peer, $0.locallyClosed, $0.reconnectPolicy) }
        let delay = local || state != .poweredOn ? nil : policy.delay(reason: reason, attempt: 1)
        connection.enter(on: executor) { $0.detached(reason: reason, willReconnect: delay != nil) }
        if let delay {
            scheduleReconnect(connection, attempt: 1, delay: delay, lastError: "\(reason)")
        } else if connectionsByPeer[peer] === connection {
            connectionsByPeer[peer] = nil
        }
    }

    func scheduleReconnect(_ connection: Connection, attempt: Int, delay: Duration, lastError: String) {
        let peer = connection.peer
        connection.enter(on: executor) { $0.emit(.reconnecting(attempt: attempt, delay: delay)) }
        reconnectTimers[peer] = scheduler.schedule(after: delay) { [weak self, executor] in
            self?.enter(on: executor) { central in
                central.reconnectTimers[peer] = nil
                // Kept so that disconnect() can stop the attempt (Task cancellation cancels
                // the pending LE Create Connection); `reconnect` removes it when it ends.
                central.reconnectTasks[peer] = (connection, Task { await central.reconnect(connection, attempt: attempt) })
            }
        }
    }

    func reconnect(_ connection: Connection, attempt: Int) async {
        let peer = connection.peer
        defer { if reconnectTasks[peer]?.connection === connection { reconnectTasks[peer] = nil } }
        // Ended by disconnect() meanwhile: it already told the observers.
        guard !connection.enter(on: executor, { $0.locallyClosed }) else { return }
        guard state == .poweredOn else {
            giveUpReconnecting(connection, lastError: "the adapter is \(state)")
            return
        }
        connection.enter(on: executor) { c in
            c.reconnectAttempts = attempt
            c.emit(.connecting(attempt: attempt + 1))
        }
        do {
            let request = connection.enter(on: executor) { $0.requestParameters }
            let (handle, params) = try await establish(peer, timeout: .seconds(10), parameters: request)
            guard !connection.enter(on: executor, { $0.locallyClosed }) else {
                // disconnect() ended the connection as this attempt completed: so does the new link.
                options.logger.log(.info, "disconnecting \(handle.hex) to \(peer): the connection was closed while it was being restored")
                let host = self.host
                Task { try? await host.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
                return
            }
            connectionsByHandle[handle] = connection
            connection.enter(on: executor) { $0.attached(handle: handle, parameters: params) }
            startLinkSetup(connection, handle: handle, parameters: request)
            await connection.runReconnectHooks()
        } catch {
            let (policy, reason, local) = connection.enter(on: executor) {
                ($0.reconnectPolicy, $0.lastDisconnectReason ?? .connectionFailedToBeEstablished, $0.locallyClosed)
            }
            if let delay = policy.delay(reason: reason, attempt: attempt + 1), !local {
                scheduleReconnect(connection, attempt: attempt + 1, delay: delay, lastError: "\(error)")
            } else {
                giveUpReconnecting(connection, lastError: "\(error)")
            }
        }
    }

    /// The policy's restore of `connection` ends: `.reconnectFailed` (unless it already ended).
    func giveUpReconnecting(_ connection: Connection, lastError: String) {
        connection.enter(on: executor) { $0.reconnectEnded(lastError: lastError) }
        if connectionsByPeer[connection.peer] === connection { connectionsByPeer[connection.peer] = nil }
    }

    /// Stops the restore of `connection`: its backoff timer, or the attempt under way. With
    /// the link down, the central forgets the connection.
    func cancelReconnect(_ connection: Connection, linkDown: Bool) {
        let peer = connection.peer
        reconnectTimers.removeValue(forKey: peer)?.cancel()
        if reconnectTasks[peer]?.connection === connection { reconnectTasks.removeValue(forKey: peer)?.task.cancel() }
        if linkDown, connectionsByPeer[peer] === connection { connectionsByPeer[peer] = nil }
    }

    /// After connecting: read the peer's features, then ask for data length extension and the
    /// 2M PHY where both sides support them. Refusals are ignored.
    func startLinkSetup(_ connection: Connection, handle: UInt16, parameters: ConnectionRequestParameters) {
        guard let info = controllerInfo else { return }
        let host = self.host
        let logger = options.logger
        Task {
            do {
                try await host.send(HCICommand.leReadRemoteFeatures(handle: handle), timeout: .seconds(1))
            } catch {
                logger.log(.debug, "LE Read Remote Features on \(handle.hex): \(error)")
            }
            if parameters.requestDataLengthExtension, info.leFeatures.contains(.leDataPacketLengthExtension) {
                do {
                    try await host.send(HCICommand.leSetDataLength(handle: handle, txOctets: 251, txTime: 2120), timeout: .seconds(1))
                } catch {
                    logger.log(.debug, "LE Set Data Length on \(handle.hex) refused: \(error)")
                }
            }
        }
    }

    func remoteFeaturesRead(handle: UInt16, features: LEFeatures) {
        guard let connection = connectionsByHandle[handle], let info = controllerInfo else { return }
        let wants2M = connection.enter(on: executor) { c in
            c.remoteFeatures = features.rawValue
            return c.requestParameters.request2MPHY
        }
        guard wants2M, info.leFeatures.contains(.le2MPHY), features.contains(.le2MPHY), info.supports(.leSetPHY) else { return }
        let host = self.host
        let logger = options.logger
        Task {
            do {
                try await host.send(HCICommand.leSetPHY(HCICommand.LESetPHY(handle: handle, allPHYs: 0, txPHYs: 0b010, rxPHYs: 0b010, phyOptions: 0)), timeout: .seconds(1))
            } catch {
                logger.log(.debug, "LE Set PHY on \(handle.hex) refused: \(error)")
            }
        }
    }
}
