#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import BLECore

/// The GATT cache an application shares across connections: one `GATTDatabaseSnapshot` per
/// peer identity. A `Peripheral` given the cache discovers a peer once, reuses the result on
/// a new link when the peer's Database Hash (0x2B2A) is the one cached, and keeps it current
/// on Service Changed. It runs on the adapter's executor, like the peripherals that use it.
///
/// Given a directory, the cache also lives on disk (`GATTCacheDirectory`): the database of a
/// peer with a stable address (public, static random, or an identity address a bond
/// resolved) and a Database Hash is written there, and a later run that connects to it reads
/// the hash, finds it equal and skips discovery. Files are written off the adapter's queue,
/// a burst of changes to one peer in one write; an unusable file is reported, removed and
/// rewritten after discovery.
///
///     let cache = GATTCache(central: central, directory: GATTCache.defaultDirectory)
///     let p = try await Peripheral(connection: link, cache: cache)
public actor GATTCache {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// The directory the cache is kept in; nil for a cache in memory only.
    public nonisolated var directory: String? { files?.path }

    private var entries: [LEAddress: GATTDatabaseSnapshot] = [:]
    private let files: GATTCacheDirectory?
    private enum Pending { case write(GATTDatabaseSnapshot), remove }
    /// What is not written to the directory yet, the latest per peer.
    private var pending: [LEAddress: Pending] = [:]
    private var writing = false
    private let flushWaiters: Waiters<Void, GATTCacheError>

    /// The directory `init(central:directory:)` uses when given none: `BLE_GATT_CACHE_DIR`,
    /// else `$XDG_STATE_HOME/swift-ble-host/gatt-cache`, else `~/.local/state/swift-ble-host/gatt-cache`.
    public static var defaultDirectory: String {
        if let d = getenv("BLE_GATT_CACHE_DIR"), d.pointee != 0 { return String(cString: d) }
        if let x = getenv("XDG_STATE_HOME"), x.pointee != 0 { return String(cString: x) + "/swift-ble-host/gatt-cache" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/state/swift-ble-host/gatt-cache"
    }

    /// An empty cache in memory on `executor` (the adapter's: `central.executor`).
    public init(executor: AdapterExecutor) {
        self.init(executor: executor, files: nil)
    }

    /// An empty cache in memory on `central`'s executor.
    public init(central: Central) {
        self.init(executor: central.executor)
    }

    /// A cache kept in `directory` too, at most `maxPeers` files (the least recently used go
    /// first). Nothing is created before the first write. `onProblem` hears of files that
    /// could not be read or written (`GATTCacheError`); the cache works on without them.
    public init(executor: AdapterExecutor, directory: String, maxPeers: Int = 256,
                onProblem: @escaping @Sendable (GATTCacheError) -> Void = { _ in }) {
        self.init(executor: executor, files: GATTCacheDirectory(path: directory, maxPeers: maxPeers, onProblem: onProblem))
    }

    /// A cache on `central`'s executor kept in `directory` (see `init(executor:directory:maxPeers:onProblem:)`).
    public init(central: Central, directory: String, maxPeers: Int = 256,
                onProblem: @escaping @Sendable (GATTCacheError) -> Void = { _ in }) {
        self.init(executor: central.executor, directory: directory, maxPeers: maxPeers, onProblem: onProblem)
    }

    private init(executor: AdapterExecutor, files: GATTCacheDirectory?) {
        self.executor = executor
        self.files = files
        self.flushWaiters = Waiters(executor: executor, scheduler: DispatchTimerScheduler(queue: executor.queue))
    }

    /// What is cached for `peer`: in memory, else read from the directory.
    public func snapshot(for peer: LEAddress) async -> GATTDatabaseSnapshot? {
        if let known = entries[peer] { return known }
        guard let files, Self.isStable(peer), pending[peer] == nil else { return nil }
        let loaded = await files.load(peer)
        // A store or remove while the file was read is newer.
        if let known = entries[peer] { return known }
        guard pending[peer] == nil, let loaded else { return nil }
        entries[peer] = loaded
        return loaded
    }

    /// Replaces what is cached for `peer`. On disk it is kept only when it is complete: the
    /// services known, a Database Hash, nothing waiting for re-discovery after Service Changed.
    public func store(_ snapshot: GATTDatabaseSnapshot, for peer: LEAddress) {
        entries[peer] = snapshot
        guard files != nil, Self.isStable(peer) else { return }
        let complete = snapshot.services != nil && snapshot.databaseHash?.count == 16 && snapshot.staleRanges.isEmpty
        schedule(complete ? .write(snapshot) : .remove, for: peer)
    }

    /// Forgets `peer`, in memory and on disk.
    public func remove(_ peer: LEAddress) {
        entries[peer] = nil
        if files != nil { schedule(.remove, for: peer) }
    }

    /// The peers with a database in memory.
    public var peers: [LEAddress] { Array(entries.keys) }

    /// Returns once every change made so far is on disk (a command line tool calls it before
    /// it exits), or throws `.flushTimeout` after `timeout`.
    ///
    ///     try await cache.flush()
    public func flush(timeout: Duration = .seconds(10)) async throws(GATTCacheError) {
        guard writing || !pending.isEmpty else { return }
        let expired = GATTCacheError.flushTimeout(pending: pending.count + 1, limit: timeout)
        try await flushWaiters.wait(deadline: (timeout, .failure(expired)), cancelled: { _ in .failure(expired) }).get()
    }

    /// Whether `peer`'s address stays the same from one connection to the next, so a file
    /// named after it is found again.
    static func isStable(_ peer: LEAddress) -> Bool {
        switch peer.type {
        case .public, .publicIdentity, .randomIdentity: true
        case .random: peer.randomKind == .static
        }
    }

    private func schedule(_ job: Pending, for peer: LEAddress) {
        pending[peer] = job
        guard !writing else { return }
        writing = true
        Task { await self.drain() }
    }

    /// Writes what is pending, one peer at a time, until nothing is.
    private func drain() async {
        while let (peer, job) = pending.first, let files {
            pending[peer] = nil
            switch job {
            case .write(let snapshot): await files.write(snapshot, for: peer)
            case .remove: await files.remove(peer)
            }
        }
        writing = false
        flushWaiters.resumeAll(with: .success(()))
    }
}
