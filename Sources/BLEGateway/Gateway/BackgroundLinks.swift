import BLECore
import BLEWire

/// The configured links of a gateway, made by the central's background connections
/// (`Central.connect(whenSeen:)`): the devices whose tasks want a link wait on the
/// controller's Filter Accept List, one create-connection command serves them all, and each
/// link made goes to its device's task. A link that arrives while its task is between two
/// attempts is held for it. Runs on the central's executor.
///
///     let connection = try await background.link(to: device.address, timeout: .seconds(10))
actor BackgroundLinks {
    nonisolated let central: Central
    nonisolated let executor: AdapterExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The devices whose tasks want a link, with how many tasks want each (a task being
    /// replaced may release its device after the new one wanted it).
    private var holders: [LEAddress: Int] = [:]
    private var wanted: Set<LEAddress> { Set(holders.keys) }
    /// The set the running background connections were started with.
    private var applied: Set<LEAddress> = []
    /// Links made while nobody waited (at most one per wanted device).
    private var arrived: [LEAddress: Connection] = [:]
    /// The task waiting for each device's link.
    private var waiting: [LEAddress: Waiters<Connection, ConnectionError>.ID] = [:]
    private let waiters: Waiters<Connection, ConnectionError>
    private var consumer: Task<Void, Never>?
    /// Which background connections the consumer follows (a replaced one's end is ignored).
    private var generation: UInt64 = 0
    /// `stop()` was called: no device is wanted again.
    private var stopped = false

    init(central: Central) {
        self.central = central
        executor = central.executor
        waiters = Waiters(executor: central.executor, scheduler: DispatchTimerScheduler(queue: central.executor.queue))
    }

    /// Puts `peer` among the devices connected in the background, until `release`.
    func want(_ peer: LEAddress) async {
        guard !stopped else { return }
        holders[peer, default: 0] += 1
        await reconcile()
    }

    /// Takes back one `want`: once nobody wants `peer`, it is taken off and a link made for
    /// it that nobody took is ended.
    func release(_ peer: LEAddress) async {
        guard let count = holders[peer] else { return }
        if count > 1 {
            holders[peer] = count - 1
            return
        }
        holders[peer] = nil
        if let unused = arrived.removeValue(forKey: peer) { await Self.end(unused) }
        await reconcile()
    }

    /// The next link to `peer` (which the caller wants, `want`), made by the background
    /// connections; `.timeout` after `timeout`, `.cancelled` when the calling task is, the
    /// background connections' own error when they end (the adapter went down).
    func link(to peer: LEAddress, timeout: Duration) async throws(ConnectionError) -> Connection {
        if let ready = arrived.removeValue(forKey: peer) { return ready }
        await reconcile()
        if let ready = arrived.removeValue(forKey: peer) { return ready }
        let expired = ConnectionError.timeout(peer: peer, milliseconds: Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        let result = await waiters.wait(deadline: (timeout, .failure(expired)), cancelled: { _ in .failure(.cancelled(peer: peer)) }) { id in
            waiting[peer] = id
        }
        if let id = waiting[peer], !waiters.contains(id) { waiting[peer] = nil }
        return try result.get()
    }

    /// Ends the background connections for good (the gateway stops) and returns the links made
    /// that no task took, for the caller to end. Once this returns the central has left them, so
    /// a link ended afterwards is not made again: a device that advertises again at once (a
    /// fleet gateway that just handed it over) is not taken back while the next holder waits.
    ///
    ///     for link in await background.stop() { try? await link.disconnect(timeout: .seconds(2)) }
    func stop() async -> [Connection] {
        stopped = true
        holders = [:]
        applied = []
        generation += 1
        let unused = Array(arrived.values)
        arrived = [:]
        let running = consumer
        consumer = nil
        running?.cancel()
        // The consumer ends once its stream saw the cancellation, whose termination handler
        // queued the central's leave on the adapter queue; a block queued after it runs after it.
        await running?.value
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in executor.queue.async { done.resume() } }
        return unused
    }

    /// Starts the background connections again when the wanted devices changed or they ended.
    private func reconcile() async {
        guard wanted != applied || (consumer == nil && !wanted.isEmpty) else { return }
        consumer?.cancel()
        consumer = nil
        applied = wanted
        guard !wanted.isEmpty else { return }
        generation += 1
        let current = generation
        let links = await central.connect(whenSeen: wanted)
        consumer = Task {
            var failure: (any Error)?
            do {
                for try await link in links { await self.arrived(link) }
            } catch {
                failure = error
            }
            self.ended(current, failure)
        }
    }

    private func arrived(_ link: Connection) async {
        let peer = link.peer
        if let id = waiting.removeValue(forKey: peer), waiters.resume(id, with: .success(link)) { return }
        guard wanted.contains(peer) else { return await Self.end(link) }
        if let older = arrived.updateValue(link, forKey: peer) { await Self.end(older) }
    }

    /// The background connections ended (replaced by another user of the central's, or with
    /// `error`: the waiting tasks get it now); the next `link(to:)` starts them again.
    private func ended(_ ended: UInt64, _ error: (any Error)?) {
        guard ended == generation else { return }
        consumer = nil
        applied = []
        guard let error else { return }
        let failure = (error as? ConnectionError) ?? .adapterNotReady(.unknown)
        for id in waiting.values { waiters.resume(id, with: .failure(failure)) }
        waiting = [:]
    }

    /// Ends a link in a task of its own, so a cancelled caller still sends the disconnect.
    static func end(_ link: Connection) async {
        await Task { try? await link.disconnect(timeout: .seconds(2)) }.value
    }
}
