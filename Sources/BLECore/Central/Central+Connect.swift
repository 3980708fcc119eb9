import BLEWire

/// Connecting: one LE Create Connection at a time, timeout and cancellation done properly
/// (LE Create Connection Cancel, then the completion with status 0x02), and reconnection.
extension Central {
    /// What a connection attempt ends with.
    typealias ConnectResult = Result<(UInt16, ConnectionParameters), ConnectionError>
    /// The machine of the one attempt pending at the controller.
    typealias Attempt = ConnectAttempt<Waiters<ConnectWaitOutcome, Never>.ID, MadeLink>
    /// What the caller's wait ends with: the outcome, and whether the caller left the attempt
    /// (cancelled) so that it ends in the background and releases the connect turn itself.
    typealias ConnectWaitOutcome = (result: Result<MadeLink, ConnectionError>, handedOff: Bool)

    /// The one attempt pending at the controller: its machine (ConnectAttempt.swift) and the
    /// timer of its phase (the connect timeout while the caller waits, the limit of LE Create
    /// Connection Cancel while it is being cancelled).
    struct PendingConnect {
        var attempt: Attempt
        var timer: (any ScheduledTimer)?

        init(peer: LEAddress, pausedScan: Bool, usesAcceptList: Bool = false) {
            attempt = ConnectAttempt(peer: peer, pausedScan: pausedScan, usesAcceptList: usesAcceptList)
        }

        var peer: LEAddress { attempt.peer }
        var pausedScan: Bool { attempt.pausedScan }
        var usesAcceptList: Bool {
            get { attempt.usesAcceptList }
            set { attempt.usesAcceptList = newValue }
        }
        var phase: Attempt.Phase { attempt.phase }
        /// The error to report once an attempt being cancelled ends.
        var abortError: ConnectionError? { attempt.abortError }
        /// The caller waiting for the completion, if one waits.
        var waiter: Waiters<ConnectWaitOutcome, Never>.ID? { attempt.waiter }
        /// The caller was cancelled and has returned: the attempt ends without it.
        var callerGone: Bool {
            if case .aborting(_, nil) = attempt.phase { return true }
            return false
        }
    }

    /// Connects to `peer`. One attempt is pending at the controller at a time; others queue.
    /// On timeout the attempt is cancelled at the controller. Cancelling the calling task
    /// throws `.cancelled` at once; an attempt already sent is cancelled at the controller
    /// (LE Create Connection Cancel) in the background, and the next attempt waits for it.
    /// With a reconnect policy, an unexpected drop is followed by new attempts, each bounded
    /// by `timeout`, and the returned `Connection` carries on. A peer that already has a
    /// connection gets it back when the options are the same, and
    /// `ConnectionError.alreadyConnected` when they differ.
    ///
    ///     let link = try await central.connect(peer, timeout: .seconds(10), reconnect: .always(maxAttempts: 5))
    public func connect(
        _ peer: LEAddress,
        timeout: Duration = .seconds(15),
        reconnect: ReconnectPolicy = .never,
        parameters: ConnectionRequestParameters = .default
    ) async throws(ConnectionError) -> Connection {
        guard state == .poweredOn else { throw .adapterNotReady(state) }
        let options = ConnectOptions(timeout: timeout, reconnect: reconnect, parameters: parameters)
        if let existing = connectionsByPeer[peer] {
            let differences = options.differences(from: existing.connectOptions)
            if !differences.isEmpty { throw .alreadyConnected(peer: peer, differing: differences) }
            if isUpOrRestoring(existing) { return existing }
        }
        connectionEventStream.yield(PeerConnectionEvent(peer: peer, event: .connecting(attempt: 1)))
        let (handle, params) = try await establish(peer, timeout: timeout, parameters: parameters)
        return adopt(peer, handle: handle, parameters: params, options: options)
    }

    /// Whether `connection` is connected or being restored by its reconnect policy.
    private func isUpOrRestoring(_ connection: Connection) -> Bool {
        connection.assumeIsolated { $0.isConnected || $0.isReconnecting }
    }

    /// The `Connection` of a link just made to `peer`: registered, announced and set up.
    func adopt(_ peer: LEAddress, handle: UInt16, parameters params: ConnectionParameters, options: ConnectOptions) -> Connection {
        let connection = Connection(central: self, host: host, peer: peer, handle: handle, parameters: params, options: options)
        // A link created on LE Coded runs on it from the start (no PHY Update Complete says so).
        if initiatesOnCoded(options.parameters) { connection.assumeIsolated { $0.phy = (.leCoded, .leCoded) } }
        connectionsByPeer[peer] = connection
        connectionsByHandle[handle] = connection
        connection.ownLinkAddress = linkOwnAddress(handle: handle)
        connection.emit(.connected(handle: handle, parameters: params))
        startLinkSetup(connection, handle: handle, parameters: options.parameters)
        return connection
    }

    /// Creates the link and waits for LE (Enhanced) Connection Complete. The connect turn is
    /// held from here until the attempt has ended at the controller: it is released here, or,
    /// when the caller was cancelled after the create command went out, once the cancelled
    /// attempt completed (`advanceConnect`).
    func establish(_ peer: LEAddress, timeout: Duration, parameters: ConnectionRequestParameters,
                   usesAcceptList: Bool = false) async throws(ConnectionError) -> (UInt16, ConnectionParameters) {
        try await acquireConnectTurn(peer)
        // The controller may have been reset (or lost) while this attempt waited for its turn.
        guard state == .poweredOn else {
            releaseConnectTurn()
            throw .adapterNotReady(state)
        }
        var pausedScan = false
        var sent = false
        while !sent {
            if Task.isCancelled {
                endConnectAttempt(peer, pausedScan: pausedScan)
                throw .cancelled(peer: peer)
            }
            // Registered before the command goes out so that a completion arriving in the same
            // read as the Command Status finds its attempt.
            pendingConnect = PendingConnect(peer: peer, pausedScan: pausedScan, usesAcceptList: usesAcceptList)
            do throws(HCIError) {
                try await host.send(createConnectionCommand(peer, parameters, usesAcceptList: usesAcceptList))
                sent = true
            } catch {
                if case .cancelledAfterSending = error {
                    // The controller has the attempt: it is cancelled there, without the caller.
                    handOffPendingConnect(peer, pausedScan: pausedScan)
                    throw .cancelled(peer: peer)
                }
                pendingConnect = nil
                if case .commandFailed(_, .commandDisallowed) = error, !pausedScan, scanner.isScanning {
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
        if case .completedEarly(let early)? = pendingConnect?.phase {
            pendingConnect = nil
            endConnectAttempt(peer, pausedScan: pausedScan)
            let link = try early.get()
            return (link.handle, link.parameters)
        }
        if pendingConnect == nil { pendingConnect = PendingConnect(peer: peer, pausedScan: pausedScan, usesAcceptList: usesAcceptList) }
        let outcome = await connectWaiters.wait(cancelled: { [weak self] _ in
            let handedOff = self?.assumeIsolated { $0.advanceConnect(.callerLeft) } ?? false
            return .success((.failure(.cancelled(peer: peer)), handedOff))
        }) { id in
            let ms = Int(timeout.nanoseconds / 1_000_000)
            let timer = scheduler.schedule(after: timeout) { [weak self] in
                self?.assumeIsolated { $0.abortPendingConnect(.timeout(peer: peer, milliseconds: ms)) }
            }
            pendingConnect?.timer = timer
            advanceConnect(.waitStarted(waiter: id))
            // A background attempt a direct connect asked to make way while it was being sent
            // is cancelled at once.
            if usesAcceptList, backgroundConnect?.state.value.preempted == true { abortPendingConnect(.cancelled(peer: peer)) }
        }.get()
        if !outcome.handedOff { endConnectAttempt(peer, pausedScan: pausedScan) }
        let link = try outcome.result.get()
        return (link.handle, link.parameters)
    }

    /// LE Extended Create Connection where the controller has it, else LE Create Connection;
    /// with `usesAcceptList`, Initiator_Filter_Policy 0x01 (the Filter Accept List, the peer
    /// address ignored), else 0x00.
    func createConnectionCommand(_ peer: LEAddress, _ p: ConnectionRequestParameters, usesAcceptList: Bool = false) -> HCICommandPacket {
        let useExtended = controllerInfo?.supportsExtendedCreateConnection ?? false
        if useExtended {
            var command = HCICommand.LEExtendedCreateConnection(peer: peer, request: p, coded: initiatesOnCoded(p))
            command.ownAddressType = ownAddressType
            if usesAcceptList { command.initiatorFilterPolicy = 0x01 }
            return HCICommand.leExtendedCreateConnection(command)
        }
        if case .leCoded = p.phy {
            options.logger.log(.info, "connecting to \(peer) on LE 1M: the controller has no LE Extended Create Connection for LE Coded")
        }
        var command = HCICommand.LECreateConnection(peer: peer, request: p)
        command.ownAddressType = ownAddressType
        if usesAcceptList { command.initiatorFilterPolicy = 0x01 }
        return HCICommand.leCreateConnection(command)
    }

    /// Whether a connection asked with `p` is initiated on LE Coded: asked for, and the
    /// controller has extended create connection and the LE Coded PHY.
    func initiatesOnCoded(_ p: ConnectionRequestParameters) -> Bool {
        guard case .leCoded = p.phy, let info = controllerInfo else { return false }
        return info.supportsExtendedCreateConnection && info.leFeatures.contains(.leCodedPHY)
    }

    /// Feeds the pending attempt `event` and carries out what it asks (`ConnectAttempt.Action`);
    /// true when its caller was handed off (it returned, and the attempt ends without it).
    @discardableResult
    func advanceConnect(_ event: Attempt.Event) -> Bool {
        guard var pending = pendingConnect else { return false }
        let actions = pending.attempt.handle(event)
        pendingConnect = pending.attempt.isEnded ? nil : pending
        var handedOff = false
        for action in actions {
            switch action {
            case .stopTimer:
                pending.timer?.cancel()
                pendingConnect?.timer = nil
            case .sendCancel(let error):
                sendConnectCancel(error)
            case .handOff:
                handedOff = true
            case .resume(let waiter, let result):
                connectWaiters.resume(waiter, with: .success((result, false)))
            case .dropLink(let link):
                options.logger.log(.info, "disconnecting \(link.handle.hex) to \(pending.peer): its connect attempt was cancelled")
                host.background { _ = try? await $0.send(HCICommand.disconnect(handle: link.handle, reason: .remoteUserTerminatedConnection)) }
            case .endAttempt:
                endConnectAttempt(pending.peer, pausedScan: pending.pausedScan)
            case .ignored(let event):
                options.logger.log(.debug, "connection attempt to \(pending.peer): \(event.name) ignored while \(pending.attempt.phaseName)")
            }
        }
        return handedOff
    }

    /// The caller was cancelled after the create command went out, before its Command
    /// Status: the attempt is cancelled at the controller without it (or, when it already
    /// completed, ended here).
    func handOffPendingConnect(_ peer: LEAddress, pausedScan: Bool) {
        guard pendingConnect != nil else { return endConnectAttempt(peer, pausedScan: pausedScan) }
        advanceConnect(.callerLeftBeforeStatus)
    }

    /// The connect timeout passed (or a background attempt must make way): the attempt is
    /// cancelled at the controller.
    func abortPendingConnect(_ error: ConnectionError) {
        advanceConnect(.timedOut(error))
    }

    /// LE Create Connection Cancel, then wait (bounded) for the completion with Unknown
    /// Connection Identifier (0x02); the attempt then ends with `error`.
    private func sendConnectCancel(_ error: ConnectionError) {
        guard let peer = pendingConnect?.peer else { return }
        let waitLimit = options.connectCancelTimeout
        pendingConnect?.timer = scheduler.schedule(after: waitLimit) { [weak self] in
            self?.assumeIsolated { central in
                central.options.logger.log(.warning, "the controller never completed the cancelled connection attempt to \(peer) within \(Int(waitLimit.nanoseconds / 1_000_000)) ms; giving up on it")
                central.failPendingConnect(error)
            }
        }
        let logger = options.logger
        host.background { host in
            do {
                try await host.send(HCICommand.leCreateConnectionCancel())
            } catch {
                // Command Disallowed: no attempt is pending any more (the completion is on its way).
                logger.log(.info, "LE Create Connection Cancel: \(error)")
            }
        }
    }

    /// The pending attempt ended without a completion (the cancel's limit passed, the adapter
    /// or the transport went away): its caller gets `error` (or keeps it until it waits); an
    /// attempt its caller left releases the connect turn.
    func failPendingConnect(_ error: ConnectionError) {
        advanceConnect(.abandoned(error))
    }

    /// The attempt is over at the controller: the next one may start, and a scan paused for
    /// it runs again.
    func endConnectAttempt(_ peer: LEAddress, pausedScan: Bool) {
        if pausedScan {
            options.logger.log(.info, "resuming the scan paused for the connection to \(peer)")
            let reference = scanner.reference
            // A task of the host's: `close()` waits for it.
            host.background { _ in await reference.scanner?.resume() }
        }
        scanner.initiatorEnded()
        releaseConnectTurn()
    }

    /// Waits for the one connect turn; a cancelled caller leaves the queue at once.
    func acquireConnectTurn(_ peer: LEAddress) async throws(ConnectionError) {
        if Task.isCancelled { throw .cancelled(peer: peer) }
        // A background attempt holds the turn while it waits for devices: it makes way.
        preemptBackgroundConnect()
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

    /// LE Connection Complete / Enhanced Connection Complete (v1, v2), with the latter's
    /// Local_Resolvable_Private_Address (nonzero) and Advertising_Handle (v2).
    func connectionCompleted(status: HCIStatus, handle: UInt16, role: UInt8, peer: LEAddress?, parameters: ConnectionParameters,
                             localPrivateAddress: BluetoothAddress? = nil, advertisingHandle: UInt8? = nil) {
        guard status == .success else {
            advanceConnect(.connectionFailed(status))
            return
        }
        let peerAddress = peer ?? LEAddress(.zero, type: .public)
        // On a kernel-owned adapter (hci-raw) a link this central did not ask for is the
        // kernel's: the host leaves it alone (no link, nothing ever sent on it).
        if options.resetController == false, role != 0x00 || (pendingConnect?.peer.address != peerAddress.address && pendingConnect?.usesAcceptList != true) {
            options.logger.log(.debug, "connection \(handle.hex) to \(peerAddress) belongs to the kernel; leaving it alone")
            host.assumeIsolated { $0.addForeignLink(handle: handle) }
            return
        }
        // Register the link before anything else so its first ACL packet finds it.
        host.assumeIsolated { $0.addLink(handle: handle, peer: peerAddress) }
        if let localPrivateAddress { ownAddress.linkLocalPrivateAddresses[handle] = localPrivateAddress }
        if role == LinkRole.peripheral.rawValue {
            return acceptPeripheralLink(handle: handle, peer: peerAddress, parameters: parameters, advertisingHandle: advertisingHandle)
        }
        guard role == 0x00, let pending = pendingConnect else {
            // A connection we did not initiate: end it.
            options.logger.log(.info, "disconnecting unexpected connection \(handle.hex) to \(peerAddress)")
            host.background { _ = try? await $0.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
            return
        }
        if pending.usesAcceptList, pending.abortError == nil { backgroundConnect?.state.value.completedPeer = peerAddress }
        // An attempt being cancelled ends the link it made (`ConnectAttempt`).
        advanceConnect(.connectionComplete(MadeLink(handle: handle, parameters: parameters)))
    }

    /// Disconnection Complete (Vol 4, Part E, 7.7.5): the link's connection decides what
    /// follows. With a Status other than Success the disconnection failed and the link stays.
    func disconnectionCompleted(handle: UInt16, status: HCIStatus, reason: HCIStatus) {
        let adapter = state
        guard status == .success else {
            connectionsByHandle[handle]?.assumeIsolated { $0.disconnectionComplete(status: status, reason: reason, adapter: adapter) }
            return
        }
        ownAddress.linkLocalPrivateAddresses[handle] = nil
        guard let connection = connectionsByHandle.removeValue(forKey: handle) else { return }
        connection.assumeIsolated { $0.disconnectionComplete(status: status, reason: reason, adapter: adapter) }
    }

    /// A reconnect attempt of `connection` created the link `handle`: the link gets this
    /// side's address on it.
    func linkRestored(_ connection: Connection, handle: UInt16) {
        connectionsByHandle[handle] = connection
        startLinkSetup(connection, handle: handle, parameters: connection.connectOptions.parameters)
        connection.ownLinkAddress = linkOwnAddress(handle: handle)
    }

    /// `connection` ended for good: the central forgets it.
    func forget(_ connection: Connection) {
        if connectionsByPeer[connection.peer] === connection { connectionsByPeer[connection.peer] = nil }
        for (handle, c) in connectionsByHandle where c === connection { connectionsByHandle[handle] = nil }
        // A known device's link ended: it goes back on the Filter Accept List.
        if let bg = backgroundConnect, bg.state.value.peers.contains(connection.peer) { refreshBackgroundConnect(bg) }
    }

    /// After connecting: read the peer's features, then ask for data length extension and the
    /// PHY asked for (`ConnectionRequestParameters.phy`) where both sides support them. Refusals
    /// leave one debug line.
    func startLinkSetup(_ connection: Connection, handle: UInt16, parameters: ConnectionRequestParameters) {
        guard let info = controllerInfo else { return }
        let logger = options.logger
        host.background { host in
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
        connection.assumeIsolated { $0.remoteFeatures = features.rawValue }
        let phy = connection.connectOptions.parameters.phy
        guard let command = Self.setPHYCommand(handle: handle, phy: phy, local: info.leFeatures, remote: features), info.supports(.leSetPHY) else { return }
        let logger = options.logger
        host.background { host in
            do {
                try await host.send(command, timeout: .seconds(1))
            } catch {
                logger.log(.debug, "LE Set PHY on \(handle.hex) refused: \(error)")
            }
        }
    }

    /// LE Set PHY (7.8.49) for `phy` on `handle` when both sides support it; nil for LE 1M.
    /// PHY bitfields: bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded.
    static func setPHYCommand(handle: UInt16, phy: ConnectionPHY, local: LEFeatures, remote: LEFeatures) -> HCICommandPacket? {
        switch phy {
        case .le1M:
            return nil
        case .le2M:
            guard local.contains(.le2MPHY), remote.contains(.le2MPHY) else { return nil }
            return HCICommand.leSetPHY(HCICommand.LESetPHY(handle: handle, allPHYs: 0, txPHYs: 0b010, rxPHYs: 0b010, phyOptions: 0))
        case .leCoded(let coding):
            guard local.contains(.leCodedPHY), remote.contains(.leCodedPHY) else { return nil }
            return HCICommand.leSetPHY(HCICommand.LESetPHY(handle: handle, allPHYs: 0, txPHYs: 0b100, rxPHYs: 0b100, phyOptions: coding.phyOptions))
        }
    }
}
