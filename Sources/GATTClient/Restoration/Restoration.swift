import BLEWire
import BLECore
import BLETransport
import Dispatch

/// Keeps an app's links and subscriptions in a `RestorationStore` and brings them back after
/// a restart: the Linux counterpart of a restore identifier. The app connects and subscribes
/// through it (what it made is stored); the next run calls `restore()`, which reconnects every
/// stored link through the controller's Filter Accept List (`Central.connect(whenSeen:)`, so
/// any number of devices come back as they come into range), raises each to its stored
/// security (a bond re-encrypts without pairing), subscribes again (CCCD writes, or none when
/// `RestorationOptions.trustsBondedServerCCCDs` and the bonded server kept them) and hands the
/// link over with its streams already subscribed. It runs on the central's executor.
///
///     let restoration = Restoration(central: central, store: RestorationStore(identifier: "hall"),
///                                   cache: cache, security: { $0.securityRaiser(store: bonds) })
///     for try await event in try await restoration.restore() {
///         if case .restored(let link) = event { resume(link.streams[measurement]) }
///     }
///     let link = try await restoration.connect(sensor, security: .encrypted)        // first run
///     let values = try await restoration.subscribe(measurement, on: link)
public actor Restoration {
    public nonisolated let central: Central
    public nonisolated let store: RestorationStore
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let options: RestorationOptions

    let cache: GATTCache
    let security: (@Sendable (Connection) -> SecurityRaiser)?
    /// The stored links by peer, once loaded.
    private var links: [LEAddress: RestorableLink] = [:]
    private var loaded = false
    /// The running `restore()`.
    private var run: RestoreRun?

    /// The state of one `restore()`: the devices still brought back, the links made for each,
    /// the background connections' consumer and the links being set up.
    final class RestoreRun: Sendable {
        private struct State {
            var wanted: Set<LEAddress>
            var made: [LEAddress: Int] = [:]
            var consumer: Task<Void, Never>?
            var setups: [UInt64: Task<Void, Never>] = [:]
            var nextSetup: UInt64 = 0
            var generation: UInt64 = 0
        }
        /// Touched only on the adapter executor, from the Restoration's isolation.
        private let state: QueueConfined<State>
        let output: AsyncThrowingStream<RestorationEvent, any Error>.Continuation

        var wanted: Set<LEAddress> {
            _read { yield state.value.wanted }
            _modify { yield &state.value.wanted }
        }
        var made: [LEAddress: Int] {
            _read { yield state.value.made }
            _modify { yield &state.value.made }
        }
        var consumer: Task<Void, Never>? {
            _read { yield state.value.consumer }
            _modify { yield &state.value.consumer }
        }
        var setups: [UInt64: Task<Void, Never>] {
            _read { yield state.value.setups }
            _modify { yield &state.value.setups }
        }
        var nextSetup: UInt64 {
            _read { yield state.value.nextSetup }
            _modify { yield &state.value.nextSetup }
        }
        /// Which background connections `consumer` follows.
        var generation: UInt64 {
            _read { yield state.value.generation }
            _modify { yield &state.value.generation }
        }

        init(wanted: Set<LEAddress>, output: AsyncThrowingStream<RestorationEvent, any Error>.Continuation, queue: DispatchQueue) {
            self.state = QueueConfined(State(wanted: wanted), on: queue)
            self.output = output
        }
    }

    /// A restoration on `central` keeping its links in `store`. `cache` (in memory when nil;
    /// give one with a directory so that a restart skips discovery) reads each peer's
    /// Database Hash; `security` makes what raises a link's security (SMP's
    /// `link.securityRaiser(store:)`), needed for links stored with a level above `.none`.
    public init(central: Central, store: RestorationStore, cache: GATTCache? = nil,
                security: (@Sendable (Connection) -> SecurityRaiser)? = nil, options: RestorationOptions = RestorationOptions()) {
        self.central = central
        self.store = store
        self.executor = central.executor
        self.cache = cache ?? GATTCache(central: central)
        self.security = security
        self.options = options
    }

    /// The stored links (read from the store the first time).
    ///
    ///     for link in try await restoration.storedLinks() { print(link.peer) }
    public func storedLinks() async throws(RestorationError) -> [RestorableLink] {
        try await ensureLoaded()
        return links.values.sorted { $0.peer.address < $1.peer.address }
    }

    // MARK: Making and storing links

    /// Connects to `peer` (as `Central.connect`), raises the link to `security`, and stores
    /// the link so that `restore()` brings it back. A `.custom` policy cannot be stored
    /// (`.customPolicy`). The link's stored subscriptions are kept.
    ///
    ///     let link = try await restoration.connect(sensor, reconnect: .always(maxAttempts: 5), security: .encrypted)
    public func connect(_ peer: LEAddress, timeout: Duration = .seconds(15), reconnect: ReconnectPolicy = .never,
                        security level: SecurityLevel = .none) async throws(RestorationError) -> RestoredLink {
        guard let stored = RestorableReconnect(reconnect) else { throw .customPolicy(peer: peer.address) }
        try await ensureLoaded()
        let connection: Connection
        do { connection = try await central.connect(peer, timeout: timeout, reconnect: reconnect, parameters: options.parameters) } catch {
            throw .connection(error)
        }
        let peripheral: Peripheral
        do throws(RestorationError) {
            peripheral = try await setUp(connection, level: level)
            var record = links[peer] ?? RestorableLink(peer: peer)
            record.reconnect = stored
            record.security = level
            try await save(record)
        } catch {
            await Self.end(connection)
            throw error
        }
        return RestoredLink(peer: peer, connection: connection, peripheral: peripheral, streams: [:], failures: [:])
    }

    /// Takes a link the app made itself (its own `Central.connect(whenSeen:)`, a direct
    /// connect) as `restore()` takes one it brought back: raised to `security`, the
    /// subscriptions stored for the peer subscribed again (the CCCD written, or kept with
    /// `trustsBondedServerCCCDs`), and the link stored with `reconnect` and `security`. The
    /// link is ended when it cannot be set up. A `.custom` policy cannot be stored.
    ///
    ///     let link = try await restoration.adopt(connection, security: .encrypted)
    ///     let values = link.notifications(for: measurement) ?? (try await restoration.subscribe(measurement, on: link))
    public func adopt(_ connection: Connection, reconnect: ReconnectPolicy = .never,
                      security level: SecurityLevel = .none) async throws(RestorationError) -> RestoredLink {
        let peer = connection.peer
        guard let stored = RestorableReconnect(reconnect) else {
            await Self.end(connection)
            throw .customPolicy(peer: peer.address)
        }
        do throws(RestorationError) { try await ensureLoaded() } catch {
            await Self.end(connection)
            throw error
        }
        var record = links[peer] ?? RestorableLink(peer: peer)
        record.reconnect = stored
        record.security = level
        if links[peer] != record {
            do throws(RestorationError) { try await save(record) } catch {
                await Self.end(connection)
                throw error
            }
        }
        switch await restoreLink(connection, record) {
        case .restored(let link):
            return link
        case .failed(_, let error):
            await Self.end(connection)
            throw error
        }
    }

    /// Subscribes to `characteristic` on `link` (as `Peripheral.subscribe(to:)`) and stores
    /// the subscription with its handles and the peer's Database Hash.
    ///
    ///     let values = try await restoration.subscribe(measurement, on: link)
    public func subscribe(_ characteristic: CharacteristicIdentifier, on link: RestoredLink,
                          indications: Bool = false) async throws(RestorationError) -> NotificationStream<[UInt8]> {
        try await ensureLoaded()
        let stream: NotificationStream<[UInt8]>
        let subscription: RestorableSubscription
        do throws(GATTError) {
            stream = try await link.peripheral.subscribe(to: characteristic, indications: indications, bufferingPolicy: options.bufferingPolicy)
            subscription = try await subscriptionRecord(characteristic, indications: indications, on: link.peripheral, link.connection)
        } catch {
            throw .gatt(error)
        }
        var record = links[link.peer] ?? RestorableLink(peer: link.peer)
        record.subscriptions.removeAll { $0.characteristic == characteristic }
        record.subscriptions.append(subscription)
        try await save(record)
        return stream
    }

    /// Forgets `peer`'s link and subscriptions: not stored any more, and a running
    /// `restore()` stops bringing it back. Its link, if up, stays.
    ///
    ///     try await restoration.forget(sensor)
    public func forget(_ peer: LEAddress) async throws(RestorationError) {
        try await ensureLoaded()
        guard links[peer] != nil else { return }
        var remaining = links
        remaining[peer] = nil
        try await store.save(Array(remaining.values))
        links = remaining
        if let run, run.wanted.remove(peer) != nil { await startBackground(run) }
    }

    /// Forgets `characteristic`'s subscription on `peer` (what the app stopped iterating is
    /// not brought back).
    public func forget(_ characteristic: CharacteristicIdentifier, of peer: LEAddress) async throws(RestorationError) {
        try await ensureLoaded()
        guard var record = links[peer], record.subscriptions.contains(where: { $0.characteristic == characteristic }) else { return }
        record.subscriptions.removeAll { $0.characteristic == characteristic }
        try await save(record)
    }

    // MARK: Restoring

    /// Brings back every stored link, as each device comes into range (the Filter Accept
    /// List, `Central.connect(whenSeen:)`), and reports each on the returned stream: links
    /// raised to their stored security, with their subscriptions' streams (`RestoredLink`),
    /// or why one could not be set up. Events wait in the stream until the app iterates it
    /// (at most `4 * RestorationFile.maximumLinks`). A link that ends comes back while its
    /// policy allows: `.never` once, `.always(maxAttempts: n)` n more times (nil: always).
    /// Reads the store first and throws its problem (`.corrupt`, `.unsupportedVersion`: the
    /// file was kept aside). The stream ends when nothing is left to bring back, when the app
    /// stops iterating (links already up stay), or with `.connection` when the adapter goes
    /// down. A second call replaces the first.
    ///
    ///     for try await event in try await restoration.restore() { ... }
    public func restore() async throws(RestorationError) -> AsyncThrowingStream<RestorationEvent, any Error> {
        stop()
        loaded = false
        try await ensureLoaded()
        let (stream, output) = AsyncThrowingStream.makeStream(of: RestorationEvent.self, throwing: (any Error).self,
                                                               bufferingPolicy: .bufferingOldest(4 * RestorationFile.maximumLinks))
        let run = RestoreRun(wanted: Set(links.keys), output: output, queue: executor.queue)
        self.run = run
        let queue = executor.queue
        output.onTermination = { [weak self] _ in
            guard let self else { return }
            queue.async { self.assumeIsolated { r in if r.run === run { r.stop() } } }
        }
        await startBackground(run)
        return stream
    }

    /// Ends the running `restore()`: its stream ends, no more links are brought back (links
    /// already up stay).
    ///
    ///     await restoration.stop()
    public func stop() {
        guard let run else { return }
        self.run = nil
        run.consumer?.cancel()
        for task in run.setups.values { task.cancel() }
        run.output.finish()
    }

    /// (Re)starts the background connections for what `run` still wants (a set of its own
    /// beside the app's other `connect(whenSeen:)` calls); ends the run's stream when nothing is.
    private func startBackground(_ run: RestoreRun) async {
        run.consumer?.cancel()
        run.consumer = nil
        guard !run.wanted.isEmpty else {
            if run.setups.isEmpty, self.run === run { stop() }
            return
        }
        run.generation += 1
        let generation = run.generation
        let connections = await central.connect(whenSeen: run.wanted, parameters: options.parameters)
        run.consumer = Task {
            var failure: (any Error)?
            do {
                for try await connection in connections { await self.broughtBack(connection, run) }
            } catch {
                failure = error
            }
            self.backgroundEnded(run, generation, failure)
        }
    }

    /// The background connections of `run` ended: replaced by this restoration (nothing to
    /// do), stopped by the central (closed), or with the adapter's error.
    private func backgroundEnded(_ run: RestoreRun, _ generation: UInt64, _ error: (any Error)?) {
        guard self.run === run, run.generation == generation, !Task.isCancelled else { return }
        self.run = nil
        for task in run.setups.values { task.cancel() }
        let failure: RestorationError
        if let error {
            failure = (error as? ConnectionError).map { .connection($0) } ?? .connection(.adapterNotReady(.unknown))
        } else {
            failure = .backgroundConnectionsReplaced
        }
        run.output.finish(throwing: failure)
    }

    /// A stored device connected: set it up in a task of its own (the next device need not
    /// wait), and stop bringing it back once its policy says so.
    private func broughtBack(_ connection: Connection, _ run: RestoreRun) async {
        let peer = connection.peer
        guard self.run === run, let record = links[peer] else {
            await Self.end(connection)
            return
        }
        let id = run.nextSetup
        run.nextSetup += 1
        run.setups[id] = Task {
            let event = await self.restoreLink(connection, record)
            if self.run === run { run.output.yield(event) }
            run.setups[id] = nil
            if run.wanted.isEmpty, run.setups.isEmpty, self.run === run { self.stop() }
        }
        let made = (run.made[peer] ?? 0) + 1
        run.made[peer] = made
        if !Self.allowsAnother(record.reconnect, made: made), run.wanted.remove(peer) != nil { await startBackground(run) }
    }

    /// Whether a device whose link was brought back `made` times comes back once more.
    static func allowsAnother(_ reconnect: RestorableReconnect, made: Int) -> Bool {
        switch reconnect {
        case .never: return false
        case .always(let maxAttempts, _): return maxAttempts.map { made <= $0 } ?? true
        }
    }

    /// Security first (the attributes may need it), then the Database Hash, then each stored
    /// subscription: kept as the bonded server holds it, or subscribed again. The stored
    /// handles follow a changed database.
    private func restoreLink(_ connection: Connection, _ record: RestorableLink) async -> RestorationEvent {
        let peer = record.peer
        let peripheral: Peripheral
        let hash: [UInt8]?
        do throws(RestorationError) {
            peripheral = try await setUp(connection, level: record.security)
            do throws(GATTError) { hash = try await peripheral.currentDatabaseHash() } catch { throw .gatt(error) }
        } catch {
            await Self.end(connection)
            return .failed(peer: peer, error)
        }
        let encrypted = await connection.securityLevel > .none
        var streams: [CharacteristicIdentifier: NotificationStream<[UInt8]>] = [:]
        var failures: [CharacteristicIdentifier: GATTError] = [:]
        var updated = record
        for (i, s) in record.subscriptions.enumerated() {
            if options.trustsBondedServerCCCDs, s.writtenEncrypted, encrypted, let stored = s.databaseHash, stored == hash {
                streams[s.characteristic] = await peripheral.subscribeKept(s.characteristic, valueHandle: s.valueHandle, cccdHandle: s.cccdHandle,
                                                                           indications: s.indications, bufferingPolicy: options.bufferingPolicy)
                continue
            }
            do throws(GATTError) {
                streams[s.characteristic] = try await peripheral.subscribe(to: s.characteristic, indications: s.indications,
                                                                           bufferingPolicy: options.bufferingPolicy)
                updated.subscriptions[i] = try await subscriptionRecord(s.characteristic, indications: s.indications, on: peripheral, connection)
            } catch {
                failures[s.characteristic] = error
            }
        }
        if updated != record, links[peer] == record {
            do throws(RestorationError) { try await save(updated) } catch { return .failed(peer: peer, error) }
        }
        return .restored(RestoredLink(peer: peer, connection: connection, peripheral: peripheral, streams: streams, failures: failures))
    }

    // MARK: Internals

    /// The link's GATT client (with the cache and the security raiser), the link raised to
    /// `level` first.
    private func setUp(_ connection: Connection, level: SecurityLevel) async throws(RestorationError) -> Peripheral {
        let raiser = security?(connection)
        if level > .none, await connection.securityLevel < level {
            guard let raiser else {
                throw .security(peer: connection.peer.address, level: level, reason: "the Restoration was made without `security`, so nothing can encrypt the link")
            }
            do { try await raiser(level, nil) } catch {
                throw .security(peer: connection.peer.address, level: level, reason: "\(error)")
            }
        }
        let peripheral: Peripheral
        do { peripheral = try await Peripheral(connection: connection, cache: cache) } catch { throw .gatt(error) }
        if let raiser { await peripheral.setSecurityRaiser(raiser) }
        return peripheral
    }

    /// The stored form of the subscription to `characteristic` just made on `peripheral`.
    private func subscriptionRecord(_ characteristic: CharacteristicIdentifier, indications: Bool, on peripheral: Peripheral,
                        _ connection: Connection) async throws(GATTError) -> RestorableSubscription {
        let handles = try await peripheral.subscriptionHandles(characteristic)
        let hash = try await peripheral.currentDatabaseHash()
        return RestorableSubscription(characteristic: characteristic, indications: indications, valueHandle: handles.value,
                                      cccdHandle: handles.cccd, databaseHash: hash, writtenEncrypted: await connection.securityLevel > .none)
    }

    private func ensureLoaded() async throws(RestorationError) {
        guard !loaded else { return }
        // Loaded once even when the file was unusable: it was kept aside, the store starts empty.
        loaded = true
        links = [:]
        for link in try await store.load() { links[link.peer] = link }
    }

    /// Stores `record` with the others; nothing changes in memory when the store fails.
    private func save(_ record: RestorableLink) async throws(RestorationError) {
        var all = links
        all[record.peer] = record
        try await store.save(all.values.sorted { $0.peer.address < $1.peer.address })
        links = all
    }

    /// Ends a link that is not kept, in a task of its own so a cancelled caller still sends
    /// the disconnect.
    static func end(_ connection: Connection) async {
        await Task { try? await connection.disconnect() }.value
    }
}
