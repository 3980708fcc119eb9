import BLEWire
import BLECore
import ATT

/// A connected GATT server seen from this client: discovery on demand (backed by an optional
/// shared `GATTCache`), reads, writes, notifications and indications, addressed by
/// `ServiceIdentifier` / `CharacteristicIdentifier`. Runs on the connection's executor.
///
///     let heartRate = ServiceIdentifier(uuid: "180D")
///     let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
///     let peripheral = try await Peripheral(connection: link)
///     for try await m in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) { print(m.beatsPerMinute) }
public actor Peripheral {
    /// The peer's identity, when known (the key of the GATT cache).
    public nonisolated let peer: LEAddress?
    /// The peer in messages ("F0:F1:F2:F3:F4:F5").
    public nonisolated let peerDescription: String
    /// The peer's address, as errors carry it (00:00:00:00:00:00 for a channel that names
    /// no address).
    public nonisolated let peerAddress: BluetoothAddress
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let connection: Connection?
    let cache: GATTCache?
    let clientMTU: UInt16
    let scheduler: any TimerScheduler
    let transactionTimeout: Duration
    /// The overall limit of one multi-request procedure (`GATTProcedures.procedureTimeout`).
    public nonisolated let procedureTimeout: Duration?

    /// The current ATT bearer (replaced when a reconnect policy restores the link).
    public private(set) var bearer: ATTBearer
    var channel: ObservedChannel
    var database = GATTDatabaseSnapshot()
    /// A cache store after Service Changed is queued and has not run yet.
    var cacheStoreScheduled = false
    nonisolated let routes: NotificationRoutes
    /// The open enhanced bearers, which the peripheral's procedures run on
    /// (Peripheral+Bearers.swift); kept while the link lives.
    var enhanced: [EnhancedBearer] = []
    /// Set by `enhancedBearers(reopenAfterRestore: true)`: a restored link opens them again.
    var reopenRequest: EnhancedBearerRequest?
    /// Server Supported Features, once read (Vol 3, Part G, 7.4).
    public internal(set) var serverFeatures: GATTServerFeatures?
    /// CCCD bookkeeping by value handle.
    var subscriptions: [UInt16: Subscription] = [:]

    enum Readiness {
        case idle
        /// The first call prepares the bearer; the others wait in `readinessWaiters`.
        case preparing
        case ready
    }
    var readiness = Readiness.idle
    let readinessWaiters: Waiters<Void, GATTError>
    /// Set once the link is gone for good.
    var terminalError: GATTError?
    /// Raises the link's security when the peer asks for more (Peripheral+Security.swift).
    var securityRaiser: SecurityRaiser?
    /// The raise of the link's security under way, whose result the other refused requests
    /// wait for (Peripheral+Security.swift).
    var securityRaise: Waiters<SecurityLevel, SecurityRaiseOutcome>?
    /// Signs Signed Write Commands (Peripheral+SignedWrite.swift).
    var writeSigner: WriteSigner?
    /// The ATT channel closed while the connection may still be restored: new calls wait for
    /// the restore (`restoreWaiters`) until `reattach` or `terminate` settles it.
    var linkDown = false
    /// Calls waiting for the restore: each is resumed once, by whichever of the restore, the
    /// end of the link, its deadline or its task's cancellation comes first.
    let restoreWaiters: Waiters<Void, GATTError>

    struct Subscription {
        let cccdHandle: UInt16
        var written: UInt16 = 0
        var writing = false
        /// Calls waiting for the CCCD write under way (true: it ended; false: the waiting
        /// task was cancelled).
        let waiters: Waiters<Bool, Never>
    }

    /// A peripheral over an ATT channel (CID 0x0004 of a link, or any `L2CAPChannel`).
    /// `peer` keys the cache; `scheduler` times the ATT transactions (a dispatch timer on the
    /// channel's queue by default); `procedureTimeout` bounds each procedure of several
    /// requests (discovery, long reads and writes) as a whole, nil for no bound.
    public init(channel: any L2CAPChannel, peer: LEAddress? = nil, cache: GATTCache? = nil, clientMTU: UInt16 = 517,
                scheduler: (any TimerScheduler)? = nil, transactionTimeout: Duration = .seconds(30),
                procedureTimeout: Duration? = GATTProcedures.defaultProcedureTimeout) {
        self.init(channel: channel, connection: nil, peer: peer, cache: cache, clientMTU: clientMTU,
                  scheduler: scheduler ?? DispatchTimerScheduler(queue: channel.executor.queue),
                  transactionTimeout: transactionTimeout, procedureTimeout: procedureTimeout)
    }

    /// A peripheral over `connection`'s ATT channel. With a reconnect policy on the
    /// connection, notification streams survive drops: after the link is restored the bearer
    /// is rebuilt, the MTU re-exchanged and every subscribed CCCD written again. Calls made
    /// while the link is being restored wait for it (at most one ATT transaction timeout).
    /// Each procedure of several requests (discovery, long reads and writes) ends within
    /// `procedureTimeout` (nil: no bound) or fails with `GATTError.procedureTimeout`.
    public init(connection: Connection, cache: GATTCache? = nil, clientMTU: UInt16 = 517,
                procedureTimeout: Duration? = GATTProcedures.defaultProcedureTimeout) async throws(GATTError) {
        let channel: any L2CAPChannel
        do { channel = try await connection.attChannel() } catch { throw .connection(error) }
        self.init(channel: channel, connection: connection, peer: connection.peer, cache: cache, clientMTU: clientMTU,
                  scheduler: connection.scheduler, transactionTimeout: .seconds(30), procedureTimeout: procedureTimeout)
        // From the start, not on first use: a drop before the first call must be followed too.
        installConnectionHooks(connection)
    }

    init(channel: any L2CAPChannel, connection: Connection?, peer: LEAddress?, cache: GATTCache?, clientMTU: UInt16,
         scheduler: any TimerScheduler, transactionTimeout: Duration, procedureTimeout: Duration?) {
        self.peer = peer
        self.peerDescription = peer.map { "\($0.address)" } ?? channel.peerDescription
        self.peerAddress = peer?.address ?? BluetoothAddress(channel.peerDescription) ?? BluetoothAddress(rawValue: 0)
        self.procedureTimeout = procedureTimeout
        self.executor = channel.executor
        self.routes = NotificationRoutes(queue: channel.executor.queue)
        self.connection = connection
        self.cache = cache
        self.clientMTU = clientMTU
        self.scheduler = scheduler
        self.transactionTimeout = transactionTimeout
        self.readinessWaiters = Waiters(executor: channel.executor, scheduler: scheduler)
        self.restoreWaiters = Waiters(executor: channel.executor, scheduler: scheduler)
        let observed = ObservedChannel(channel)
        self.channel = observed
        self.bearer = ATTBearer(channel: observed, scheduler: scheduler, clientMTU: clientMTU, transactionTimeout: transactionTimeout)
        observed.onClose = Peripheral.closeHandler(self)
    }

    private static func closeHandler(_ peripheral: Peripheral) -> @Sendable (ObservedChannel, LinkError) -> Void {
        { [weak peripheral] channel, error in
            guard let peripheral else { return }
            peripheral.assumeIsolated { $0.channelClosed(channel, error) }
        }
    }

    /// The effective ATT_MTU of the unenhanced bearer (each enhanced bearer has its own:
    /// `bearerPool`).
    public var mtu: UInt16 { get async { await bearer.mtu } }

    /// What is known of the peer's database now.
    public var snapshot: GATTDatabaseSnapshot { database }

    // MARK: Readiness

    /// Before the first operation on a bearer: the value handler, the MTU exchange and, with
    /// a cache, the Database Hash check.
    func procedures() async throws(GATTError) -> GATTProcedures {
        if let terminalError { throw terminalError }
        if linkDown {
            try await waitForRestore()
            return try await procedures()
        }
        switch readiness {
        case .ready:
            return GATTProcedures(bearer: bearer, procedureTimeout: procedureTimeout)
        case .preparing:
            let result = await waitForPreparation()
            // The preparing call was cancelled, not this one: prepare again.
            if case .failure(.cancelled) = result, !Task.isCancelled { return try await procedures() }
            try result.get()
            return try await procedures()
        case .idle:
            readiness = .preparing
            let result: Result<Void, GATTError>
            do throws(GATTError) { try await prepare(); result = .success(()) } catch { result = .failure(error) }
            if case .success = result { readiness = .ready } else { readiness = .idle }
            readinessWaiters.resumeAll(with: result)
            try result.get()
            return GATTProcedures(bearer: bearer, procedureTimeout: procedureTimeout)
        }
    }

    /// Waits for the call preparing the bearer; a cancelled caller stops waiting at once.
    private func waitForPreparation() async -> Result<Void, GATTError> {
        let cancelled = GATTError.cancelled(operation: .waitingForPreparation, target: .server)
        return await readinessWaiters.wait(cancelled: { _ in .failure(cancelled) })
    }

    private func prepare() async throws(GATTError) {
        await routeValues(of: bearer)
        routes.serviceChanged = { [weak self] value in
            self?.assumeIsolated { $0.serviceChanged(value) }
        }
        do throws(ATTError) {
            _ = try await bearer.exchangeMTU()
        } catch {
            if case .errorResponse = error {} else { throw gattError(.att(error), .exchangingMTU, .server) }
        }
        let procedures = GATTProcedures(bearer: bearer, procedureTimeout: procedureTimeout)
        if let cache, let peer {
            let hash = try await readDatabaseHash(procedures)
            if database.services == nil, let cached = await cache.snapshot(for: peer), cached.databaseHash == hash {
                database = cached
            } else if database.databaseHash != hash {
                database = GATTDatabaseSnapshot()
            }
            database.databaseHash = hash
        }
        // A database known from the cache or an earlier link: Service Changed indications
        // are enabled again on this bearer.
        if database.services != nil { try await configureServiceChanged(procedures) }
    }

    /// Hands `bearer`'s notifications and indications to this peripheral's subscriptions;
    /// each indication is confirmed on `bearer`, the one it came on. The unenhanced bearer
    /// and every enhanced one (with EATT the server picks the bearer for each value)
    /// share the same routes.
    func routeValues(of bearer: ATTBearer) async {
        let routes = self.routes
        await bearer.setNotificationHandler { handle, value in routes.deliverNotification(handle: handle, value: value) }
        await bearer.setIndicationHandler { event, confirm in routes.deliverIndication(event, confirm: confirm) }
    }

    /// Reads Database Hash (Read Using Characteristic UUID, 4.8.2); nil when the peer has none.
    private func readDatabaseHash(_ p: GATTProcedures) async throws(GATTError) -> [UInt8]? {
        do throws(GATTProcedureError) {
            return try await p.read(type: GATTAttributeType.databaseHash).first?.value
        } catch {
            if case .att(.errorResponse) = error { return nil }
            throw gattError(error, .reading, .attribute(GATTAttributeType.databaseHash, handle: nil))
        }
    }

    /// Follows `connection` through its one link-state signal: down (calls wait for the
    /// restore), up again on a new handle (`reattach`), or closed for good (`terminate`). The
    /// signal comes on the adapter queue in the same turn as the transition, and first with
    /// the state now, so nothing the connection does from here on is missed.
    private func installConnectionHooks(_ connection: Connection) {
        connection.assumeIsolated { c in
            // Weak: the connection keeps its observers for its whole life, so a strong
            // capture of it here would be a cycle that outlives the Central's close().
            c.observeLinkState { [weak self, weak connection] state in
                guard let connection else { return }
                self?.assumeIsolated { $0.linkStateChanged(state, of: connection) }
            }
        }
    }

    func linkStateChanged(_ state: LinkState, of connection: Connection) {
        guard terminalError == nil else { return }
        switch state {
        case .connected:
            // Up again after a drop: take the new link.
            if linkDown { ownedTask { await $0.reattach(connection) } }
        case .reconnecting, .connecting:
            readiness = .idle
            dropEnhancedBearers()
            for h in subscriptions.keys { subscriptions[h]?.written = 0 }
            linkDown = true
        case .disconnecting:
            break
        case .closed(let why):
            terminate(.disconnected(peer: peerAddress, reason: "\(why)"))
        }
    }

    // MARK: Link events

    /// The ATT channel closed. Over a `Connection` the link state decides what follows
    /// (`linkStateChanged`); a bare channel does not come back.
    func channelClosed(_ closed: ObservedChannel, _ error: LinkError) {
        guard closed === channel else { return }
        readiness = .idle
        for h in subscriptions.keys { subscriptions[h]?.written = 0 }
        if connection == nil { terminate(.disconnected(peer: peerAddress, reason: Self.reason(of: error))) }
    }

    /// Runs `work` in a task the link owns (`Central.close()` cancels and waits for it), or
    /// in one of the peripheral's own over a channel without an owner.
    func ownedTask(_ work: @escaping @Sendable (isolated Peripheral) async -> Void) {
        channel.runTask { await work(self) }
    }

    func terminate(_ error: GATTError) {
        guard terminalError == nil else { return }
        terminalError = error
        dropEnhancedBearers()
        routes.finishAll(error)
        linkDown = false
        resumeRestoreWaiters(.failure(error))
    }

    /// A call made while the link is being restored waits for it, at most one ATT
    /// transaction timeout on the peripheral's scheduler; the end of the link fails it at
    /// once with the reason, and so does the cancellation of its task.
    private func waitForRestore() async throws(GATTError) {
        let limit = transactionTimeout
        let expired = GATTError.disconnected(peer: peerAddress, reason: "the link was not restored within the ATT transaction timeout (\(limit))")
        let cancelled = GATTError.cancelled(operation: .waitingForRestore, target: .server)
        try await restoreWaiters.wait(deadline: (limit, .failure(expired)), cancelled: { _ in .failure(cancelled) }).get()
    }

    private func resumeRestoreWaiters(_ result: Result<Void, GATTError>) {
        restoreWaiters.resumeAll(with: result)
    }

    /// The link was restored: a new bearer over the new ATT channel, the MTU exchanged again,
    /// the enhanced bearers opened again when asked for (`reopenAfterRestore`), every CCCD
    /// with subscribers written again. When that fails (the peer refuses the CCCD
    /// write, or does not answer), the streams concerned end with the error instead of
    /// waiting in silence; when the link drops again meanwhile, the next restore retries.
    func reattach(_ link: Connection) async {
        guard terminalError == nil, let newChannel = try? await link.attChannel() else { return }
        let observed = ObservedChannel(newChannel)
        observed.onClose = Peripheral.closeHandler(self)
        channel = observed
        bearer = ATTBearer(channel: observed, scheduler: scheduler, clientMTU: clientMTU, transactionTimeout: transactionTimeout)
        readiness = .idle
        for h in subscriptions.keys { subscriptions[h]?.written = 0 }
        // A link that was encrypted is encrypted again (with the bond) before any request or
        // CCCD write: those attributes may need it (Vol 3, Part C, 10.3.1.1 and 10.3.2.2).
        let securityFailure = await restoreSecurity(link)
        // Calls made during the outage go on now; they queue behind this preparation.
        linkDown = false
        resumeRestoreWaiters(.success(()))
        do throws(GATTError) {
            if let securityFailure { throw securityFailure }
            _ = try await procedures()
        } catch {
            for h in subscriptions.keys { resubscriptionFailed(h, error) }
            return
        }
        await reopenEnhancedBearers()
        for h in subscriptions.keys {
            do throws(GATTError) { try await reconcile(h) } catch { resubscriptionFailed(h, error) }
        }
    }

    /// Ends the current streams of the characteristic at `handle` with `error`, unless the
    /// link went away again (then the next restore subscribes them). Later subscribers start
    /// afresh.
    private func resubscriptionFailed(_ handle: UInt16, _ error: GATTError) {
        if case .disconnected = error { return }
        guard let route = routes.route(handle) else { return }
        route.notifications.finishCurrent(throwing: error)
        route.indications.finishCurrent(throwing: error)
    }

    // MARK: Errors

    /// Why a link closed, without the peer (the error names it once).
    static func reason(of error: LinkError) -> String {
        switch error {
        case .disconnected(_, let reason): "\(reason)"
        case .closed: "closed by this host"
        case .transportLost, .controllerReset, .tooLarge, .cancelled, .sendTimeout, .queueFull: "\(error)"
        }
    }

    func gattError(_ error: GATTProcedureError, _ operation: GATTOperation, _ target: GATTTarget) -> GATTError {
        switch error {
        case .invalidResponse(let why):
            return .malformed(operation: operation, target: target, peer: peerAddress, detail: why)
        case .procedureTimeout(let progress, let limit):
            return .procedureTimeout(progress, limit: limit, peer: peerAddress)
        case .att(let att):
            switch att {
            case .errorResponse(let code, _, _):
                if code == .databaseOutOfSync { databaseOutOfSync() }
                return .attribute(code, operation: operation, target: target, peer: peerAddress)
            case .transactionTimeout:
                return .timeout(operation: operation, target: target, peer: peerAddress)
            case .linkClosed(let why):
                return terminalError ?? .disconnected(peer: peerAddress, reason: Self.reason(of: why))
            case .cancelled:
                return .cancelled(operation: operation, target: target)
            case .pduTooLarge(_, let size, let mtu):
                return .valueTooLong(length: size - 3, maximum: Int(mtu) - 3, operation: operation, target: target)
            case .malformedResponse(_, let why):
                return .malformed(operation: operation, target: target, peer: peerAddress, detail: "\(why)")
            default:
                return .malformed(operation: operation, target: target, peer: peerAddress, detail: "\(att)")
            }
        }
    }
}
