import BLETransport

/// The one way the stack suspends a caller until something happens on the adapter executor:
/// callers wait by id; the owner resumes one of them, the oldest, or all; a waiter whose
/// task is cancelled is taken out at once (through its own `cancelled` result, so the owner
/// can undo its part); a waiter with a deadline gets its `deadline` result when the
/// scheduler's timer fires (so `ManualScheduler` drives it in tests).
///
/// Every method runs on the executor's queue: the owner is an actor on that executor, and
/// task cancellation (which fires on any thread) hops there before touching a waiter. A
/// waiter is resumed exactly once; resuming an id that is gone (resumed, cancelled, expired)
/// does nothing.
///
///     let done = Waiters<Void, LinkError>(executor: executor, scheduler: scheduler)
///     let result = await done.wait(cancelled: { _ in .failure(.closed(peer: peer, handle: handle)) }) { id in queue.append(id) }
///     done.resume(id, with: .success(()))   // later, on the executor
package final class Waiters<Value: Sendable, Failure: Error>: Sendable {
    public typealias ID = UInt64
    public typealias Outcome = Result<Value, Failure>

    public let executor: AdapterExecutor
    public let scheduler: any TimerScheduler

    private struct Entry {
        let continuation: CheckedContinuation<Outcome, Never>
        let cancelled: @Sendable (ID) -> Outcome
        var timer: (any ScheduledTimer)?
    }
    private struct State {
        var entries: [ID: Entry] = [:]
        var nextID: ID = 0
        /// No live waiter has an id below this one: where `resumeFirst` starts looking.
        var oldest: ID = 0
        /// Told the count after every change (tests only): empty otherwise, so the data path
        /// only checks `isEmpty`.
        var countObservers: [UInt64: (Int) -> Void] = [:]
        var nextCountObserver: UInt64 = 0
    }
    private let state: QueueConfined<State>

    public init(executor: AdapterExecutor, scheduler: any TimerScheduler) {
        self.executor = executor
        self.scheduler = scheduler
        self.state = QueueConfined(State(), on: executor.queue)
    }

    /// How many callers wait now.
    public var count: Int { state.value.entries.count }
    public var isEmpty: Bool { state.value.entries.isEmpty }
    public func contains(_ id: ID) -> Bool { state.value.entries[id] != nil }

    /// Suspends the calling task until `resume`, `resumeFirst`, `resumeAll` or `failAll`
    /// reaches it, its task is cancelled, or `deadline` passes.
    ///
    /// - `added` runs right after the waiter was registered, before the caller suspends and
    ///   on the executor: the place to queue the work that will resume it (it may resume the
    ///   waiter at once).
    /// - `cancelled` gives the result of a waiter whose task is cancelled while it waits. It
    ///   runs on the executor and only while the waiter still waits, so it may undo the
    ///   owner's part (dequeue a request). A task already cancelled when it calls `wait`
    ///   gets it at once, without `added` running.
    /// - `deadline`: after that long on the scheduler the waiter gets `result`.
    public func wait(
        isolation: isolated (any Actor)? = #isolation,
        deadline: (after: Duration, result: Outcome)? = nil,
        cancelled: @escaping @Sendable (ID) -> Outcome,
        added: (ID) -> Void = { _ in }
    ) async -> Outcome {
        let id = state.value.nextID
        state.value.nextID &+= 1
        if Task.isCancelled { return cancelled(id) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { (c: CheckedContinuation<Outcome, Never>) in
                assert(executor.isOnQueue, "Waiters.wait called off its executor")
                var entry = Entry(continuation: c, cancelled: cancelled)
                if let deadline {
                    let result = deadline.result
                    entry.timer = scheduler.schedule(after: deadline.after) { [weak self] in self?.resume(id, with: result) }
                }
                state.value.entries[id] = entry
                added(id)
                if !state.value.countObservers.isEmpty { countChanged() }
            }
        } onCancel: {
            executor.queue.async { self.cancel(id) }
        }
    }

    /// Resumes waiter `id` with `result`; false when it no longer waits.
    @discardableResult
    public func resume(_ id: ID, with result: Outcome) -> Bool {
        guard let entry = state.value.entries.removeValue(forKey: id) else { return false }
        entry.timer?.cancel()
        entry.continuation.resume(returning: result)
        if !state.value.countObservers.isEmpty { countChanged() }
        return true
    }

    /// Resumes the waiter that has waited longest (first in, first out); false when none waits.
    @discardableResult
    public func resumeFirst(with result: Outcome) -> Bool {
        while state.value.oldest < state.value.nextID {
            if resume(state.value.oldest, with: result) { return true }
            state.value.oldest &+= 1
        }
        return false
    }

    /// Resumes every waiter with `result` (in the order they came).
    public func resumeAll(with result: Outcome) {
        let ids = state.value.entries.keys.sorted()
        for id in ids { resume(id, with: result) }
    }

    /// Fails every waiter with `error`.
    public func failAll(_ error: Failure) {
        resumeAll(with: .failure(error))
    }

    /// Resumes waiter `id` with its `cancelled` result, as its task's cancellation does.
    public func cancel(_ id: ID) {
        guard let entry = state.value.entries.removeValue(forKey: id) else { return }
        entry.timer?.cancel()
        entry.continuation.resume(returning: entry.cancelled(id))
        if !state.value.countObservers.isEmpty { countChanged() }
    }

    // MARK: Observing the count (tests)

    /// Calls `observer` on the executor with `count` after every change (a waiter added, once
    /// its `added` ran; a waiter resumed, cancelled or expired) until `removeCountObserver`
    /// is given the returned token. On the executor; for tests that wait for a caller to be
    /// parked (see `BLETestSupport`'s `waitForCount`).
    ///
    ///     let token = waiters.addCountObserver { count in if count == 2 { ... } }
    @_spi(Internals) public func addCountObserver(_ observer: @escaping (Int) -> Void) -> UInt64 {
        state.value.nextCountObserver &+= 1
        let token = state.value.nextCountObserver
        state.value.countObservers[token] = observer
        return token
    }

    /// Stops the observer `token` stands for; on the executor.
    @_spi(Internals) public func removeCountObserver(_ token: UInt64) {
        state.value.countObservers[token] = nil
    }

    private func countChanged() {
        let count = state.value.entries.count
        let observers = state.value.countObservers.values
        for observer in observers { observer(count) }
    }
}
