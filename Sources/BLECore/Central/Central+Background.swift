import BLEWire

/// Background connections: known devices connect as they come into range, through the
/// controller's Filter Accept List (Vol 4, Part E, 7.8.14 to 7.8.17) and one create-connection
/// command with Initiator_Filter_Policy 0x01 (7.8.12, 7.8.66), so no direct connect is pending
/// per device.
///
/// The attempt takes the connect turn like any other, and makes way for a direct `connect`
/// (LE Create Connection Cancel, then the direct attempt, then it goes on), so it coexists with
/// scanning as a direct attempt does (a controller that cannot scan and initiate at once gets
/// the scan paused while it waits). The list holds the known devices without a link, as many
/// as the controller's LE Read Filter Accept List Size (or as many as it accepted before
/// Memory Capacity Exceeded); the rest are connected by a passive scan that connects each one
/// it sees with a direct connect.
final class BackgroundConnect: @unchecked Sendable { // touched only on the adapter executor, from the Central's isolation
    /// The known devices, in a fixed order (the first ones go on the list).
    let peers: [LEAddress]
    let parameters: ConnectionRequestParameters
    let output: AsyncThrowingStream<Connection, any Error>.Continuation
    /// Entries the controller's list holds; nil until read.
    var capacity: Int?
    /// What the controller's list holds now (as far as this central changed it).
    var loaded: [LEAddress]?
    /// The device the pending attempt connected to (from its connection complete event).
    var completedPeer: LEAddress?
    /// A direct connect asked the pending attempt to make way.
    var preempted = false
    var loop: Task<Void, Never>?
    /// Known devices past the list's size, and the scan that connects them.
    var overflow: Set<LEAddress> = []
    var overflowScan: Task<Void, Never>?

    init(peers: [LEAddress], parameters: ConnectionRequestParameters, output: AsyncThrowingStream<Connection, any Error>.Continuation) {
        self.peers = peers
        self.parameters = parameters
        self.output = output
    }
}

extension Central {
    /// How long one background attempt waits before it is renewed at the controller.
    static let backgroundAttemptLifetime: Duration = .seconds(60)

    /// Connects to each of `peers` whenever it comes into range, and again after its link ends,
    /// while the stream is iterated: the controller's Filter Accept List holds them, and one
    /// background attempt connects whichever advertises first (see `BackgroundConnect`). Each
    /// new link is yielded as a `Connection` (reconnect `.never`: the device goes back on the
    /// list when the link ends). A direct `connect` is served first; a second call replaces the
    /// set (the earlier stream ends). Beyond the list's size, a passive scan connects the rest
    /// as it sees them. The stream ends when the consumer stops iterating, with
    /// `ConnectionError.adapterNotReady` when the adapter goes down, and with the controller's
    /// error when it refuses the list or the attempt; links already made stay.
    ///
    ///     for try await link in await central.connect(whenSeen: knownSensors) { subscribe(link) }
    public func connect(whenSeen peers: Set<LEAddress>, parameters: ConnectionRequestParameters = .default) -> AsyncThrowingStream<Connection, any Error> {
        stopBackgroundConnect(error: nil)
        let (stream, output) = AsyncThrowingStream.makeStream(of: Connection.self, throwing: (any Error).self)
        guard state == .poweredOn else {
            output.finish(throwing: ConnectionError.adapterNotReady(state))
            return stream
        }
        guard !peers.isEmpty else {
            output.finish()
            return stream
        }
        let ordered = peers.sorted { ($0.address, $0.type.isRandom ? 1 : 0) < ($1.address, $1.type.isRandom ? 1 : 0) }
        let bg = BackgroundConnect(peers: ordered, parameters: parameters, output: output)
        backgroundConnect = bg
        let queue = executor.queue
        output.onTermination = { [weak self, executor] _ in
            guard let self else { return }
            queue.async { self.enter(on: executor) { central in if central.backgroundConnect === bg { central.stopBackgroundConnect(error: nil) } } }
        }
        startBackgroundLoop(bg)
        return stream
    }

    /// Ends the background connections (their stream ends, with `error` when given).
    func stopBackgroundConnect(error: (any Error)?) {
        guard let bg = backgroundConnect else { return }
        backgroundConnect = nil
        bg.loop?.cancel()
        bg.overflowScan?.cancel()
        bg.output.finish(throwing: error)
    }

    private func startBackgroundLoop(_ bg: BackgroundConnect) {
        guard bg.loop == nil else { return }
        bg.loop = Task { await self.runBackgroundConnect(bg) }
    }

    /// A known device lost its link: the list is made again with it.
    func refreshBackgroundConnect(_ bg: BackgroundConnect) {
        if bg.loop == nil { startBackgroundLoop(bg) } else { preemptBackgroundConnect() }
    }

    /// Asks the pending background attempt to make way (it is cancelled at the controller and
    /// tried again after whoever asked).
    func preemptBackgroundConnect() {
        guard let pending = pendingConnect, pending.usesAcceptList, let bg = backgroundConnect else { return }
        bg.preempted = true
        if case .waiting = pending.phase { abortPendingConnect(.cancelled(peer: pending.peer)) }
    }

    private func runBackgroundConnect(_ bg: BackgroundConnect) async {
        defer { bg.loop = nil }
        while backgroundConnect === bg, !Task.isCancelled {
            guard state == .poweredOn else { return end(bg, ConnectionError.adapterNotReady(state)) }
            if bg.capacity == nil { bg.capacity = await readFilterAcceptListSize() }
            let waiting = bg.peers.filter { connectionsByPeer[$0] == nil }
            let listed = Array(waiting.prefix(bg.capacity ?? 0))
            bg.overflow = Set(waiting.dropFirst(listed.count))
            updateOverflowScan(bg)
            guard let first = listed.first else { return }
            // The list changes only while no attempt is pending at the controller (it refuses
            // them meanwhile): a replaced set's attempt, cancelled, may still be ending; the
            // connect turn is free once it has.
            do throws(ConnectionError) { try await acquireConnectTurn(first) } catch { return end(bg, error) }
            do throws(HCIError) {
                try await loadFilterAcceptList(listed, bg)
                releaseConnectTurn()
            } catch {
                releaseConnectTurn()
                return end(bg, ConnectionError.command(peer: first, error))
            }
            // Memory Capacity Exceeded made the list shorter: share the devices out again.
            if bg.loaded?.count != listed.count { continue }
            bg.preempted = false
            do throws(ConnectionError) {
                let (handle, params) = try await establish(first, timeout: Self.backgroundAttemptLifetime, parameters: bg.parameters, usesAcceptList: true)
                guard let peer = bg.completedPeer else { continue }
                bg.completedPeer = nil
                let options = ConnectOptions(timeout: Self.backgroundAttemptLifetime, reconnect: .never, parameters: bg.parameters)
                bg.output.yield(adopt(peer, handle: handle, parameters: params, options: options))
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

    /// Ends `bg` with `error` unless it was replaced or stopped meanwhile (its loop, cancelled,
    /// must not end the set that replaced it); a cancellation ends nothing.
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
        guard bg.loaded != devices else { return }
        bg.loaded = nil
        try await host.send(HCICommand.leClearFilterAcceptList())
        var loaded: [LEAddress] = []
        for device in devices {
            do throws(HCIError) {
                try await host.send(HCICommand.leAddDeviceToFilterAcceptList(device))
                loaded.append(device)
            } catch {
                guard case .commandFailed(_, let status) = error, status.rawValue == 0x07 else { throw error }
                options.logger.log(.info, "the Filter Accept List is full after \(loaded.count) devices (Memory Capacity Exceeded adding \(device)); the others are connected when a scan sees them")
                bg.capacity = loaded.count
                break
            }
        }
        bg.loaded = loaded
    }

    /// Runs the passive scan that connects the known devices past the list, while there are any.
    private func updateOverflowScan(_ bg: BackgroundConnect) {
        guard !bg.overflow.isEmpty else {
            bg.overflowScan?.cancel()
            bg.overflowScan = nil
            return
        }
        guard bg.overflowScan == nil else { return }
        let events = scan(options: ScanOptions(mode: .passive, allowDuplicates: true, duplicateInterval: .seconds(1)))
        bg.overflowScan = Task {
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
        guard backgroundConnect === bg, bg.overflow.contains(peer), connectionsByPeer[peer] == nil else { return }
        do throws(ConnectionError) {
            bg.output.yield(try await connect(peer, timeout: .seconds(5), parameters: bg.parameters))
        } catch {
            options.logger.log(.debug, "connecting known device \(peer) seen by the scan: \(error)")
        }
    }
}
