import BLEWire

/// Background connections: known devices connect as they come into range, through the
/// controller's Filter Accept List (Vol 4, Part E, 7.8.14 to 7.8.17) and one create-connection
/// command with Initiator_Filter_Policy 0x01 (7.8.12, 7.8.66), so no direct connect is pending
/// per device. Every `connect(whenSeen:)` is a set of its own over the one list
/// (`BackgroundConnect`).
///
/// The attempt takes the connect turn like any other, and makes way for a direct `connect`
/// (LE Create Connection Cancel, then the direct attempt, then it goes on), so it coexists with
/// scanning as a direct attempt does; on a controller that cannot scan and initiate at once,
/// attempts and the scan take turns (Central+BackgroundWindows.swift). The list holds the
/// known devices without a link, as many as the controller's LE Read Filter Accept List Size
/// (or as many as it accepted before Memory Capacity Exceeded); the rest are connected by a
/// passive scan that connects each one it sees with a direct connect.
extension Central {
    /// How long one background attempt waits before it is renewed at the controller.
    static let backgroundAttemptLifetime: Duration = .seconds(60)

    /// Connects to each of `peers` whenever it comes into range, and again after its link ends,
    /// while the stream is iterated: the controller's Filter Accept List holds them, and one
    /// background attempt connects whichever advertises first (see `BackgroundConnect`). Each
    /// new link is yielded as a `Connection` (reconnect `.never`: the device goes back on the
    /// list when the link ends). Every call is a set of its own: the list holds the union of
    /// the running sets, a device leaves it when no set wants it, each stream gets only its
    /// own devices' links (a device in several sets: the oldest set's), and ending one stream
    /// leaves the others running. The attempt uses the oldest set's `parameters`. A direct
    /// `connect` is served first. Beyond the list's size, a passive scan connects the rest as
    /// it sees them. The stream ends when the consumer stops iterating, with
    /// `ConnectionError.adapterNotReady` when the adapter goes down, and with the controller's
    /// error when it refuses the list or the attempt (every set's stream then); links already
    /// made stay.
    ///
    ///     for try await link in await central.connect(whenSeen: knownSensors) { subscribe(link) }
    public func connect(whenSeen peers: Set<LEAddress>, parameters: ConnectionRequestParameters = .default) -> AsyncThrowingStream<Connection, any Error> {
        let (stream, output) = AsyncThrowingStream.makeStream(of: Connection.self, throwing: (any Error).self)
        guard state == .poweredOn else {
            output.finish(throwing: ConnectionError.adapterNotReady(state))
            return stream
        }
        guard !peers.isEmpty else {
            output.finish()
            return stream
        }
        let bg: BackgroundConnect
        if let running = backgroundConnect {
            bg = running
        } else {
            bg = BackgroundConnect(queue: executor.queue)
            backgroundConnect = bg
        }
        let subscription = BackgroundConnect.Subscription(peers: peers, parameters: parameters, output: output)
        let grew = bg.add(subscription)
        let queue = executor.queue
        output.onTermination = { [weak self] _ in
            guard let self else { return }
            queue.async { self.assumeIsolated { central in central.leaveBackgroundConnect(subscription, bg) } }
        }
        if grew || bg.state.value.loop == nil { refreshBackgroundConnect(bg) }
        return stream
    }

    /// A caller's set ended: its devices leave the list unless another set wants them; the
    /// last set stops the background connections.
    private func leaveBackgroundConnect(_ subscription: BackgroundConnect.Subscription, _ bg: BackgroundConnect) {
        guard backgroundConnect === bg, bg.remove(subscription) || bg.state.value.subscriptions.isEmpty else { return }
        if bg.state.value.subscriptions.isEmpty { return stopBackgroundConnect(error: nil) }
        refreshBackgroundConnect(bg)
    }

    /// Ends the background connections (every set's stream ends, with `error` when given).
    func stopBackgroundConnect(error: (any Error)?) {
        guard let bg = backgroundConnect else { return }
        backgroundConnect = nil
        bg.state.value.loop?.cancel()
        bg.state.value.overflowScan?.cancel()
        bg.finishAll(error: error)
    }

    private func startBackgroundLoop(_ bg: BackgroundConnect) {
        guard bg.state.value.loop == nil else { return }
        bg.state.value.loop = Task { await self.runBackgroundConnect(bg) }
    }

    /// The devices to connect changed (a set came or went, a known device lost its link): the
    /// list is made again.
    func refreshBackgroundConnect(_ bg: BackgroundConnect) {
        guard bg.state.value.loop != nil else { return startBackgroundLoop(bg) }
        // An attempt about to go out with the old list is cancelled as soon as it is sent.
        bg.state.value.preempted = true
        preemptBackgroundConnect()
    }

    /// Asks the pending background attempt to make way (it is cancelled at the controller and
    /// tried again after whoever asked).
    func preemptBackgroundConnect() {
        guard let pending = pendingConnect, pending.usesAcceptList, let bg = backgroundConnect else { return }
        bg.state.value.preempted = true
        if case .waiting = pending.phase { abortPendingConnect(.cancelled(peer: pending.peer)) }
    }

    /// The devices for the list now (those without a link, as many as it holds) and those past it.
    private func listing(_ bg: BackgroundConnect) -> (listed: [LEAddress], overflow: Set<LEAddress>) {
        let waiting = bg.ordered.filter { connectionsByPeer[$0] == nil }
        let listed = Array(waiting.prefix(bg.state.value.capacity ?? 0))
        return (listed, Set(waiting.dropFirst(listed.count)))
    }

    private func runBackgroundConnect(_ bg: BackgroundConnect) async {
        defer { bg.state.value.loop = nil }
        while backgroundConnect === bg, !Task.isCancelled {
            guard state == .poweredOn else { return end(bg, ConnectionError.adapterNotReady(state)) }
            if bg.state.value.capacity == nil { bg.state.value.capacity = await readFilterAcceptListSize() }
            let (listed, overflow) = listing(bg)
            bg.state.value.overflow = overflow
            updateOverflowScan(bg)
            guard let first = listed.first else { return }
            // The list changes only while no attempt is pending at the controller (it refuses
            // them meanwhile): an earlier attempt, cancelled, may still be ending; the connect
            // turn is free once it has.
            do throws(ConnectionError) { try await acquireConnectTurn(first) } catch { return end(bg, error) }
            bg.state.value.preempted = false
            do throws(HCIError) {
                try await loadFilterAcceptList(listed, bg)
                releaseConnectTurn()
            } catch {
                releaseConnectTurn()
                return end(bg, ConnectionError.command(peer: first, error))
            }
            // Memory Capacity Exceeded made the list shorter, or the sets changed while it
            // was loaded: share the devices out again.
            if bg.state.value.loaded?.count != listed.count || listing(bg).listed != listed { continue }
            do throws(ConnectionError) {
                guard let made = try await backgroundAttempt(first, bg) else { continue }
                let (handle, params) = made
                guard let peer = bg.state.value.completedPeer else { continue }
                bg.state.value.completedPeer = nil
                let options = ConnectOptions(timeout: Self.backgroundAttemptLifetime, reconnect: .never, parameters: bg.parameters)
                deliver(adopt(peer, handle: handle, parameters: params, options: options), bg)
            } catch {
                switch error {
                case .timeout, .cancelled:
                    // Renewed, or made way for a direct connect, or the list changes.
                    continue
                default:
                    return end(bg, error)
                }
            }
        }
    }

    /// Hands a link made for a known device to its set; a link no set wants any more (its
    /// set ended while the attempt completed) is ended.
    private func deliver(_ connection: Connection, _ bg: BackgroundConnect) {
        guard !bg.deliver(connection) else { return }
        options.logger.log(.info, "disconnecting \(connection.peer): its background connection set ended while it connected")
        host.background { _ in try? await connection.disconnect() }
    }

    /// Ends `bg` with `error` unless it was stopped meanwhile (its loop, cancelled, must not
    /// end the background connections that followed); a cancellation ends nothing.
    private func end(_ bg: BackgroundConnect, _ error: ConnectionError) {
        guard backgroundConnect === bg, !Task.isCancelled else { return }
        if case .cancelled = error { return }
        stopBackgroundConnect(error: error)
    }

    /// LE Read Filter Accept List Size (7.8.14); 0 (every device goes to the scan) when the
    /// controller does not answer it.
    private func readFilterAcceptListSize() async -> Int {
        do {
            let rp = try await host.send(HCICommand.leReadFilterAcceptListSize())
            guard rp.count >= 2 else { return 0 }
            options.logger.log(.debug, "the Filter Accept List holds \(rp[1]) devices")
            return Int(rp[1])
        } catch {
            options.logger.log(.info, "LE Read Filter Accept List Size: \(error); known devices are connected when a scan sees them")
            return 0
        }
    }

    /// Makes the controller's Filter Accept List hold `devices` (LE Clear Filter Accept List,
    /// then one LE Add Device To Filter Accept List each). An add refused with Memory Capacity
    /// Exceeded (0x07) shrinks `capacity` to what fit.
    private func loadFilterAcceptList(_ devices: [LEAddress], _ bg: BackgroundConnect) async throws(HCIError) {
        guard bg.state.value.loaded != devices else { return }
        bg.state.value.loaded = nil
        try await host.send(HCICommand.leClearFilterAcceptList())
        var loaded: [LEAddress] = []
        for device in devices {
            do throws(HCIError) {
                try await host.send(HCICommand.leAddDeviceToFilterAcceptList(device))
                loaded.append(device)
            } catch {
                guard case .commandFailed(_, let status) = error, status.rawValue == 0x07 else { throw error }
                options.logger.log(.info, "the Filter Accept List is full after \(loaded.count) devices (Memory Capacity Exceeded adding \(device)); the others are connected when a scan sees them")
                bg.state.value.capacity = loaded.count
                break
            }
        }
        bg.state.value.loaded = loaded
    }

    /// Runs the passive scan that connects the known devices past the list, while there are any.
    private func updateOverflowScan(_ bg: BackgroundConnect) {
        guard !bg.state.value.overflow.isEmpty else {
            bg.state.value.overflowScan?.cancel()
            bg.state.value.overflowScan = nil
            return
        }
        guard bg.state.value.overflowScan == nil else { return }
        let events = scan(options: ScanOptions(mode: .passive, allowDuplicates: true, duplicateInterval: .seconds(1)))
        bg.state.value.overflowScan = Task {
            do {
                for try await event in events {
                    switch event {
                    case .discovered(let seen), .updated(let seen):
                        if seen.isConnectable { await self.connectOverflow(seen.address, bg) }
                    case .lost:
                        break
                    }
                }
            } catch {
                self.options.logger.log(.info, "the scan for known devices past the Filter Accept List ended: \(error)")
            }
        }
    }

    /// A known device past the list was seen: a direct connect to it.
    private func connectOverflow(_ peer: LEAddress, _ bg: BackgroundConnect) async {
        guard backgroundConnect === bg, bg.state.value.overflow.contains(peer), connectionsByPeer[peer] == nil else { return }
        do throws(ConnectionError) {
            deliver(try await connect(peer, timeout: .seconds(5), parameters: bg.parameters), bg)
        } catch {
            options.logger.log(.debug, "connecting known device \(peer) seen by the scan: \(error)")
        }
    }
}
