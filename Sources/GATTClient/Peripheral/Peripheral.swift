/// A connected GATT server seen from this client: discovery on demand (backed by an optional
/// shared `GATTCache`), reads, writes, notifications and indications, addressed by
/// `ServiceIdentifier` / `CharacteristicIdentifier`. Runs on the connection's executor.
///
///     let heartRate = try ServiceIdentifier(uuid: "180D")
///     let measurement = try CharacteristicIdentifier(uuid: "2A37", service: heartRate)
///     let peripheral = try await Peripheral(connection: link)
///     for try await m in peripheral.notifications(for: measurement, as: HeartRateMeasurement.self) { print(m.beatsPerMinute) }
public actor Peripheral {
    /// The peer's identity, when known (the key of the GATT cache).
    public nonisolated let peer: LEAddress?
    /// The peer in messages ("F0:F1:F2:F3:F4:F5").
    public nonisolated let peerDescription: String
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let connection: Connection?
    let cache: GATTCache?
    let clientMTU: UInt16
    let scheduler: any TimerScheduler
    let transactionTimeout: Duration

    /// The current ATT bearer (replaced when a reconnect policy restores the link).
    public private(set) var bearer: ATTBearer
    var channel: ObservedChannel
    var database = GATTDatabaseSnapshot()
    nonisolated let routes = NotificationRoutes()
    /// CCCD bookkeeping by value handle.
    var subscriptions: [UInt16: Subscription] = [:]

    enum Readiness {
        case idle
        case preparing([CheckedContinuation<Result<Void, GATTError>, Never>])
        case ready
    }
    var readiness = Readiness.idle
    var hooksInstalled = false
    /// Set once the link is gone for good.
    var terminalError: GATTError?

    struct Subscription {
        let cccdHandle: UInt16
        var written: UInt16 = 0
        var writing = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// A peripheral over an ATT channel (CID 0x0004 of a link, or any `L2CAPChannel`).
    /// `peer` keys the cache; `scheduler` times the ATT transactions (a dispatch timer on the
    /// channel's queue by default).
    public init(channel: any L2CAPChannel, peer: LEAddress? = nil, cache: GATTCache? = nil, clientMTU: UInt16 = 517,
                scheduler: (any TimerScheduler)? = nil, transactionTimeout: Duration = .seconds(30)) {
        self.init(channel: channel, connection: nil, peer: peer, cache: cache, clientMTU: clientMTU,
                  scheduler: scheduler ?? DispatchTimerScheduler(queue: channel.executor.queue),
                  transactionTimeout: transactionTimeout)
    }

    /// A peripheral over `connection`'s ATT channel. With a reconnect policy on the
    /// connection, notification streams survive drops: after the link is restored the bearer
    /// is rebuilt, the MTU re-exchanged and every subscribed CCCD written again.
    public init(connection: Connection, cache: GATTCache? = nil, clientMTU: UInt16 = 517) async throws(GATTError) {
        let channel: any L2CAPChannel
        do { channel = try await connection.attChannel() } catch { throw .connection(error) }
        self.init(channel: channel, connection: connection, peer: connection.peer, cache: cache, clientMTU: clientMTU,
                  scheduler: connection.scheduler, transactionTimeout: .seconds(30))
    }

    init(channel: any L2CAPChannel, connection: Connection?, peer: LEAddress?, cache: GATTCache?, clientMTU: UInt16,
         scheduler: any TimerScheduler, transactionTimeout: Duration) {
        self.peer = peer
        self.peerDescription = peer.map { "\($0.address)" } ?? channel.peerDescription
        self.executor = channel.executor
        self.connection = connection
        self.cache = cache
        self.clientMTU = clientMTU
        self.scheduler = scheduler
        self.transactionTimeout = transactionTimeout
        let observed = ObservedChannel(channel)
        self.channel = observed
        self.bearer = ATTBearer(channel: observed, scheduler: scheduler, clientMTU: clientMTU, transactionTimeout: transactionTimeout)
        observed.onClose = Peripheral.closeHandler(self)
    }

    private static func closeHandler(_ peripheral: Peripheral) -> @Sendable (ObservedChannel, LinkError) -> Void {
        { [weak peripheral] channel, error in
            guard let peripheral else { return }
            peripheral.enter(on: channel.executor) { $0.channelClosed(channel, error) }
        }
    }

    /// The effective ATT_MTU.
    public var mtu: UInt16 { get async { await bearer.mtu } }

    /// What is known of the peer's database now.
    public var snapshot: GATTDatabaseSnapshot { database }

    // MARK: Readiness

    /// Before the first operation on a bearer: the value handler, the MTU exchange and, with
    /// a cache, the Database Hash check.
    func procedures() async throws(GATTError) -> GATTProcedures {
        if let terminalError { throw terminalError }
        switch readiness {
        case .ready:
            return GATTProcedures(bearer: bearer)
        case .preparing:
            let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, GATTError>, Never>) in
                if case .preparing(var waiters) = readiness { waiters.append(c); readiness = .preparing(waiters) } else { c.resume(returning: .success(())) }
            }
            try result.get()
            return try await procedures()
        case .idle:
            readiness = .preparing([])
            let result: Result<Void, GATTError>
            do throws(GATTError) { try await prepare(); result = .success(()) } catch { result = .failure(error) }
            let waiters: [CheckedContinuation<Result<Void, GATTError>, Never>]
            if case .preparing(let w) = readiness { waiters = w } else { waiters = [] }
            if case .success = result { readiness = .ready } else { readiness = .idle }
            for w in waiters { w.resume(returning: result) }
            try result.get()
            return GATTProcedures(bearer: bearer)
        }
    }

    private func prepare() async throws(GATTError) {
        if !hooksInstalled, let connection {
            hooksInstalled = true
            await installConnectionHooks(connection)
        }
        let routes = self.routes
        await bearer.setValueHandler { event in routes.deliver(event) }
        await bearer.setNotificationHandler { handle, value in routes.deliver(handle: handle, value: value, isIndication: false) }
        routes.serviceChanged = { [weak self, executor] value in
            self?.enter(on: executor) { $0.serviceChanged(value) }
        }
        do throws(ATTError) {
            _ = try await bearer.exchangeMTU()
        } catch {
            if case .errorResponse = error {} else { throw gattError(.att(error), "exchanging the MTU", "with the server") }
        }
        let procedures = GATTProcedures(bearer: bearer)
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

    /// Reads Database Hash (Read Using Characteristic UUID, 4.8.2); nil when the peer has none.
    private func readDatabaseHash(_ p: GATTProcedures) async throws(GATTError) -> [UInt8]? {
        do throws(GATTProcedureError) {
            return try await p.read(type: GATTAttributeType.databaseHash).first?.value
        } catch {
            if case .att(.errorResponse) = error { return nil }
            throw gattError(error, "reading", GATTAttributeType.databaseHash.gattDisplayName)
        }
    }

    private func installConnectionHooks(_ connection: Connection) async {
        await connection.onReconnect { [weak self] link in await self?.reattach(link) }
        let events = await connection.events()
        let peerName = peerDescription
        Task { [weak self] in
            for await event in events {
                switch event {
                case .disconnected(let reason, let willReconnect) where !willReconnect:
                    await self?.terminate(.disconnected(peer: peerName, reason: "\(reason)"))
                    return
                case .reconnectFailed(let attempts, let lastError):
                    await self?.terminate(.disconnected(peer: peerName, reason: "gave up reconnecting after \(attempts) attempts: \(lastError)"))
                    return
                default:
                    break
                }
            }
        }
    }

    // MARK: Link events

    func channelClosed(_ closed: ObservedChannel, _ error: LinkError) {
        guard closed === channel else { return }
        readiness = .idle
        for h in subscriptions.keys { subscriptions[h]?.written = 0 }
        // Without a connection to restore it, or with the transport gone, nothing comes back.
        if connection == nil { terminate(.disconnected(peer: peerDescription, reason: Self.reason(of: error))) }
        if case .transportLost = error { terminate(.disconnected(peer: peerDescription, reason: Self.reason(of: error))) }
    }

    func terminate(_ error: GATTError) {
        guard terminalError == nil else { return }
        terminalError = error
        routes.finishAll(error)
    }

    /// The link was restored: a new bearer over the new ATT channel, the MTU exchanged again,
    /// every CCCD with subscribers written again. When that fails (the peer refuses the CCCD
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
        do throws(GATTError) {
            _ = try await procedures()
        } catch {
            for h in subscriptions.keys { resubscriptionFailed(h, error) }
            return
        }
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
        case .transportLost, .tooLarge: "\(error)"
        }
    }

    func gattError(_ error: GATTProcedureError, _ operation: String, _ target: String) -> GATTError {
        switch error {
        case .invalidResponse(let why):
            return .malformed(operation: operation, target: target, peer: peerDescription, detail: why)
        case .att(let att):
            switch att {
            case .errorResponse(let code, _, _):
                return .attribute(code, operation: operation, target: target, peer: peerDescription)
            case .transactionTimeout:
                return .timeout(operation: operation, target: target, peer: peerDescription)
            case .linkClosed(let why):
                return terminalError ?? .disconnected(peer: peerDescription, reason: Self.reason(of: why))
            case .cancelled:
                return .cancelled(operation: operation, target: target)
            case .pduTooLarge(_, let size, let mtu):
                return .valueTooLong(length: size - 3, maximum: Int(mtu) - 3, operation: operation, target: target)
            case .malformedResponse(_, let why):
                return .malformed(operation: operation, target: target, peer: peerDescription, detail: "\(why)")
            default:
                return .malformed(operation: operation, target: target, peer: peerDescription, detail: "\(att)")
            }
        }
    }
}
