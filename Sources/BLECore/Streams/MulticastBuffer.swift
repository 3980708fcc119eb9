import Dispatch
import Synchronization
import BLETransport

/// A multicast buffer for hot streams such as notifications: each subscriber has its own queue
/// on the adapter executor and at most one suspended consumer, and values are handed over in
/// batches. A waiting consumer is resumed with the first value; when it comes back for more it
/// takes everything queued since in one hop onto the adapter queue, then iterates that batch
/// without synchronising. A value costs no lock and no allocation (each subscriber swaps two
/// arrays back and forth), where an `AsyncThrowingStream` per subscriber costs a lock, a
/// resume and a cancellation record per value.
///
/// The producer side (`yield`, `finish`, `subscribe`) runs on the adapter queue. Each
/// subscription is iterated by one task at a time, as with `AsyncThrowingStream`. A buffering
/// policy bounds the values queued for a subscriber (a batch being iterated belongs to the
/// consumer); values it drops are counted in `droppedCount` (and per subscriber in
/// `MulticastSubscription.droppedCount`) and logged; under `endingWhenFull` the subscriber's
/// iteration ends with `StreamError.consumerTooSlow` instead. `yield(_:whenAccepted:)`
/// never drops: a full subscriber takes the value once its consumer makes room (the
/// back-pressure of indications, confirmed only then).
///
///     let values = MulticastBuffer<[UInt8]>(executor: executor, name: "notifications of 0x0012")
///     let subscription = values.subscribe(bufferingPolicy: .bufferingNewest(16))   // on the adapter queue
///     values.yield([0x01])                                                          // on the adapter queue
///     while let v = try await subscription.next() { print(v) }                      // anywhere
///
/// `@usableFromInline`, as `QueueConfined` is: without it no other module inlines or specialises
/// `yield` and `subscriberCount`, and each call looks up the buffer's generic metadata.
@usableFromInline package final class MulticastBuffer<Element: Sendable>: Sendable {
    public let executor: AdapterExecutor
    /// Names the stream in log lines.
    public let name: String

    /// The producer's side, confined to the adapter queue (checked in debug builds).
    @usableFromInline
    struct State {
        var logger: BLELogger
        @usableFromInline var queues: [SubscriberQueue] = [] {
            didSet { single = queues.count == 1 ? Unmanaged.passUnretained(queues[0]) : nil }
        }
        /// `queues[0]` when it is the only subscriber, unretained (`queues` holds it): one
        /// subscriber's value then costs no reference count on the way to its queue.
        @usableFromInline var single: Unmanaged<SubscriberQueue>?
        var ended: (any Error)??
        var droppedCount = 0
        var onSubscriberCountChange: (@Sendable (Int) -> Void)?

        init(logger: BLELogger) { self.logger = logger }
    }
    @usableFromInline let state: QueueConfined<State>

    /// Where drops are reported (silent by default).
    public var logger: BLELogger {
        get { state.value.logger }
        set { state.value.logger = newValue }
    }
    /// Values dropped by subscribers' buffering policies since the buffer was made.
    public var droppedCount: Int { state.value.droppedCount }
    /// Called on the adapter queue when the number of subscribers changes (e.g. to clear a
    /// CCCD when the last subscriber leaves).
    public var onSubscriberCountChange: (@Sendable (Int) -> Void)? {
        get { state.value.onSubscriberCountChange }
        set { state.value.onSubscriberCountChange = newValue }
    }

    public init(executor: AdapterExecutor, name: String, logger: BLELogger = .silent) {
        self.executor = executor
        self.name = name
        self.state = QueueConfined(State(logger: logger), on: executor.queue)
    }

    @inlinable public var subscriberCount: Int { state.value.queues.count }
    /// True once `finish` was called: later subscribers get an ended subscription.
    public var isFinished: Bool { state.value.ended != nil }

    /// Tells the observer the number of subscribers, now `count`.
    private func subscriberCountChanged(_ count: Int) {
        if let onSubscriberCountChange = state.value.onSubscriberCountChange { onSubscriberCountChange(count) }
    }

    /// A new subscriber of the values yielded from now on. Call on the adapter queue.
    public func subscribe(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> MulticastSubscription<Element> {
        let queue = SubscriberQueue(bufferingPolicy, on: executor.queue)
        if let ended = state.value.ended {
            queue.state.value.end = ended
        } else {
            queue.state.value.owner = self
            state.value.queues.append(queue)
            subscriberCountChanged(state.value.queues.count)
        }
        return MulticastSubscription(queue: queue, executor: executor)
    }

    /// Delivers `value` to every subscriber: a waiting one is resumed, the others queue it
    /// as their buffering policy allows. Call on the adapter queue.
    @inlinable
    public func yield(_ value: consuming Element) {
        if let single = state.value.single {
            // One subscriber (the common case) takes the value itself: moved, not copied,
            // and its queue borrowed without a reference count.
            var moved: Element? = consume value
            let accepted = single._withUnsafeGuaranteedRef { $0.push(moved.take()!) }
            if !accepted { dropped(single.takeUnretainedValue()) }
            return
        }
        let queues = state.value.queues
        for queue in queues where !queue.push(copy value) {
            dropped(queue)
        }
    }

    /// Queues `value` for every subscriber as its buffering policy allows (drops are counted
    /// as with `yield`) but resumes no waiting consumer: `release()` hands each consumer all
    /// that was held for it at once. A producer that makes many values in one job (the scan:
    /// every report of one transport read) so wakes each consumer once, not for its first value
    /// and then again for the rest. Call on the adapter queue; call `release()` before the
    /// values are due (the scanner does it in a job of its own after the read).
    ///
    ///     for e in events { buffer.hold(e) }
    ///     buffer.release()
    func hold(_ value: consuming Element) {
        if let single = state.value.single {
            var moved: Element? = consume value
            let accepted = single._withUnsafeGuaranteedRef { $0.hold(moved.take()!) }
            if !accepted { dropped(single.takeUnretainedValue()) }
            return
        }
        let queues = state.value.queues
        for queue in queues where !queue.hold(copy value) {
            dropped(queue)
        }
    }

    /// Resumes every consumer that waits with what `hold` queued for it. Call on the adapter queue.
    func release() {
        let queues = state.value.queues
        for queue in queues { queue.release() }
    }

    /// Delivers `value` to every subscriber without dropping it: a subscriber whose buffer is
    /// full takes it once its consumer has made room. `accepted` runs on the adapter queue once
    /// every subscriber holds the value (at once when all have room, or when there are none;
    /// a subscriber that leaves meanwhile no longer counts). Call on the adapter queue.
    ///
    ///     buffer.yield(value, whenAccepted: { bearer.confirm() })   // an indication
    public func yield(_ value: Element, whenAccepted accepted: @escaping @Sendable () -> Void) {
        let acceptance = Acceptance(accepted)
        let queues = state.value.queues
        for queue in queues {
            if queue.state.value.parked.isEmpty, queue.hasRoom {
                _ = queue.push(value)
            } else {
                acceptance.remaining += 1
                queue.state.value.parked.append((value, acceptance))
            }
        }
        acceptance.release(0)
    }

    /// A value held back by full subscribers: `done` runs once all of them have taken it.
    /// Lives in the subscribers' confined state, on the adapter queue.
    final class Acceptance {
        var remaining = 0
        private var done: (@Sendable () -> Void)?
        init(_ done: @escaping @Sendable () -> Void) { self.done = done }
        /// One subscriber took the value (or left); `n` is 1, or 0 to check only.
        func release(_ n: Int) {
            remaining -= n
            guard remaining <= 0, let done else { return }
            self.done = nil
            done()
        }
    }

    @usableFromInline
    func dropped(_ queue: SubscriberQueue) {
        let logger = state.value.logger
        if queue.endsWhenFull {
            // `endingWhenFull`: the iteration ends after what is queued; the subscriber leaves.
            logger.log(.warning, "\(name): a subscriber fell \(queue.limit) values behind; its stream ends (policy \(queue.policy))",
                       metadata: ["stream": name])
            queue.finish(StreamError.consumerTooSlow(stream: name, limit: queue.limit))
            remove(queue)
            return
        }
        state.value.droppedCount += 1
        let n = queue.dropped.add(1, ordering: .relaxed).newValue
        // 1, 10, 100, ...: every drop is counted, the log is not flooded.
        var p = 1
        while p < n { p *= 10 }
        if p == n {
            logger.log(.warning, "\(name): a subscriber's buffering policy (\(queue.policy)) has dropped \(n) value\(n == 1 ? "" : "s"); it iterates slower than values arrive",
                       metadata: ["stream": name])
        }
    }

    /// Ends every subscription once its queued values are consumed: with `error` thrown, or
    /// normally when nil. Later subscribers get an ended subscription.
    public func finish(throwing error: (any Error)? = nil) {
        guard state.value.ended == nil else { return }
        state.value.ended = .some(error)
        finishCurrent(throwing: error)
    }

    /// Ends the current subscriptions (with `error`, or normally when nil) but accepts new
    /// subscribers afterwards: a link that will be restored. Call on the adapter queue.
    public func finishCurrent(throwing error: (any Error)? = nil) {
        let all = state.value.queues
        state.value.queues.removeAll()
        for queue in all { queue.finish(error) }
        if !all.isEmpty { subscriberCountChanged(0) }
    }

    func remove(_ queue: SubscriberQueue) {
        guard let i = state.value.queues.firstIndex(where: { $0 === queue }) else { return }
        state.value.queues.remove(at: i)
        subscriberCountChanged(state.value.queues.count)
    }

    /// What a consumer gets from one hop: a batch (from `start`) or the end.
    @usableFromInline
    enum Delivery: Sendable {
        case values([Element], start: Int)
        case end((any Error)?)
    }

    /// One subscriber's side: its queue, confined to the adapter queue (checked in debug
    /// builds), and the slot through which its consumer arms itself from any thread.
    @usableFromInline
    final class SubscriberQueue: Sendable {
        /// Most values queued at once; `Int.max` when unbounded.
        @usableFromInline let limit: Int
        /// When full: drop the oldest queued value (true) or the new one (false).
        @usableFromInline let keepNewest: Bool
        /// When full: end the subscriber's iteration (`endingWhenFull`).
        @usableFromInline let endsWhenFull: Bool

        @usableFromInline
        struct State {
            /// Queued values are `pending[head...]`.
            @usableFromInline var pending: [Element] = []
            @usableFromInline var head = 0
            /// An emptied array given back by the consumer, reused for the next batch.
            @usableFromInline var spare: [Element] = []
            @usableFromInline var waiter: UnsafeContinuation<Delivery, Never>?
            var end: (any Error)??
            var cancelled = false
            /// Values of `yield(_:whenAccepted:)` waiting for room, in order.
            var parked: [(value: Element, acceptance: Acceptance)] = []
            /// Strong while subscribed (a cycle with `queues` that `leave` and `finish` break):
            /// a weak reference would give the buffer a side table, and every retain of it on the
            /// per-value path would take the slow route.
            var owner: MulticastBuffer?
        }
        @usableFromInline let state: QueueConfined<State>

        /// A consumer that finished its batch and waits for the next one, without a hop onto
        /// the adapter queue (which may be busy with a burst of packets): its continuation and
        /// the emptied array it gives back.
        struct Armed: Sendable {
            let continuation: UnsafeContinuation<Delivery, Never>
            let returned: [Element]
        }
        /// Set by the consumer, from its own thread, before `armed`: the producer hands it what
        /// is queued at its next `push`, or the job the consumer queued does. Locked once per
        /// batch on each side, never per value.
        let armedSlot = Mutex<Armed?>(nil)
        /// True while `armedSlot` holds a consumer: the one test a value pays.
        @usableFromInline let armed = Atomic<Bool>(false)
        /// Values the policy dropped for this subscriber; read from any thread.
        @usableFromInline let dropped = Atomic<Int>(0)

        let policy: StreamBufferingPolicy

        init(_ policy: StreamBufferingPolicy, on queue: DispatchQueue) {
            self.policy = policy
            limit = policy.limit ?? .max
            if case .bufferingNewest = policy { keepNewest = true } else { keepNewest = false }
            if case .endingWhenFull = policy { endsWhenFull = true } else { endsWhenFull = false }
            state = QueueConfined(State(), on: queue)
        }

        /// True when a value pushed now would be neither dropped nor refused.
        var hasRoom: Bool {
            let queued = state.value.pending.count - state.value.head
            return queued < limit || (state.value.waiter != nil && queued == 0)
        }

        /// Queues or hands over `value`; false when the policy dropped a value.
        @inlinable
        func push(_ value: consuming Element) -> Bool {
            if armed.load(ordering: .relaxed) { return handOver(value) }
            if let waiter = state.value.waiter, state.value.pending.count == state.value.head {
                // Nothing is queued while a consumer waits (unless values are held for
                // `release`, which hands them over in order).
                state.value.waiter = nil
                var batch = state.value.spare
                state.value.spare = []
                batch.append(value)
                waiter.resume(returning: .values(batch, start: 0))
                return true
            }
            return hold(value)
        }

        /// Queues `value` as the policy allows without resuming the consumer; false when the
        /// policy dropped a value.
        @inlinable
        func hold(_ value: consuming Element) -> Bool {
            if state.value.pending.count - state.value.head < limit {
                state.value.pending.append(value)
                return true
            }
            if keepNewest, limit > 0 {
                // Drop the oldest.
                state.value.pending.append(value)
                state.value.head += 1
                let head = state.value.head
                if head >= 32, head * 2 >= state.value.pending.count {
                    state.value.pending.removeFirst(head)
                    state.value.head = 0
                }
            }
            return false
        }

        /// Hands what is queued to a consumer waiting (or armed) for it.
        func release() {
            guard state.value.pending.count > state.value.head else { return }
            if let waiter = state.value.waiter {
                state.value.waiter = nil
                take(returning: [], waiter)
            } else if let c = claimArmed() {
                take(returning: [], c)
            }
        }

        /// The consumer armed itself while this value came: it takes everything queued with it.
        @usableFromInline
        func handOver(_ value: consuming Element) -> Bool {
            guard let c = claimArmed() else { return push(value) }
            state.value.pending.append(value)
            take(returning: [], c)
            return true
        }

        /// The armed consumer's continuation, once (nil when another claimed it first), with
        /// the array it gave back kept for reuse. On the adapter queue.
        func claimArmed() -> UnsafeContinuation<Delivery, Never>? {
            guard armed.exchange(false, ordering: .acquiring), let slot = armedSlot.withLock({ $0.take() }) else { return nil }
            if state.value.spare.capacity < slot.returned.capacity { state.value.spare = slot.returned }
            return slot.continuation
        }

        /// Called by the consumer, on its own thread: `c` waits for the next batch and `drained`
        /// is its emptied array. Served by the producer's next `push` or by `takeIfArmed`.
        func arm(_ c: UnsafeContinuation<Delivery, Never>, returning drained: [Element]) {
            armedSlot.withLock { $0 = Armed(continuation: c, returned: drained) }
            armed.store(true, ordering: .releasing)
        }

        /// The job an arming consumer queues: serves it unless a `push` already did.
        func takeIfArmed() {
            if let c = claimArmed() { take(returning: [], c) }
        }

        /// The consumer's hop: everything queued, the end, or a wait for the next value.
        func take(returning drained: [Element], _ c: UnsafeContinuation<Delivery, Never>) {
            if state.value.spare.capacity < drained.capacity { state.value.spare = drained }
            if state.value.pending.count > state.value.head {
                let batch = state.value.pending, start = state.value.head
                state.value.pending = state.value.spare
                state.value.spare = []
                state.value.head = 0
                admitParked()
                c.resume(returning: .values(batch, start: start))
            } else if !state.value.parked.isEmpty {
                // No room at all (a zero limit): the waiting consumer takes the oldest held value.
                let (value, acceptance) = state.value.parked.removeFirst()
                var batch = state.value.spare
                state.value.spare = []
                batch.append(value)
                acceptance.release(1)
                admitParked()
                c.resume(returning: .values(batch, start: 0))
            } else if state.value.cancelled {
                c.resume(returning: .end(nil))
            } else if let end = state.value.end {
                c.resume(returning: .end(end))
            } else {
                state.value.pending.removeAll(keepingCapacity: true)
                state.value.head = 0
                state.value.waiter = c
            }
        }

        /// Moves held values into the queue while it has room.
        func admitParked() {
            while !state.value.parked.isEmpty, state.value.pending.count - state.value.head < limit {
                let (value, acceptance) = state.value.parked.removeFirst()
                state.value.pending.append(value)
                acceptance.release(1)
            }
        }

        /// Lets go of the held values: they no longer wait for this subscriber.
        func releaseParked() {
            let all = state.value.parked
            state.value.parked.removeAll()
            for (_, acceptance) in all { acceptance.release(1) }
        }

        func finish(_ error: (any Error)?) {
            state.value.owner = nil
            if let c = claimArmed() { state.value.waiter = c }
            // Held values are delivered before the end (at most one per held indication).
            if !state.value.cancelled {
                let parked = state.value.parked
                for (value, _) in parked { state.value.pending.append(value) }
            }
            releaseParked()
            if state.value.end == nil { state.value.end = .some(error) }
            if let waiter = state.value.waiter {
                state.value.waiter = nil
                if state.value.pending.count > state.value.head {
                    let batch = state.value.pending, start = state.value.head
                    state.value.pending = []
                    state.value.head = 0
                    waiter.resume(returning: .values(batch, start: start))
                } else {
                    waiter.resume(returning: .end(error))
                }
            }
        }

        /// The consuming task was cancelled: end the iteration and leave.
        func cancel() {
            state.value.cancelled = true
            if let c = claimArmed() { state.value.waiter = c }
            state.value.pending.removeAll()
            state.value.head = 0
            releaseParked()
            if let waiter = state.value.waiter {
                state.value.waiter = nil
                waiter.resume(returning: .end(nil))
            }
            leave()
        }

        func leave() {
            releaseParked()
            let owner = state.value.owner
            state.value.owner = nil
            owner?.remove(self)
        }
    }
}

/// One subscriber of a `MulticastBuffer`: iterate it with `next()` from one task at a time.
/// Dropping it (or cancelling the task waiting in `next()`) unsubscribes it.
///
///     let subscription = buffer.subscribe()
///     while let value = try await subscription.next() { handle(value) }
public final class MulticastSubscription<Element: Sendable>: @unchecked Sendable { // `batch`, `index` and `finished` belong to the one iterating task (`busy` traps on concurrent use); a lock would cost one per value
    typealias Buffer = MulticastBuffer<Element>
    let queue: Buffer.SubscriberQueue
    let executor: AdapterExecutor
    // Unchecked: only the iterating task touches these, which `busy` enforces.
    @usableFromInline @exclusivity(unchecked) var batch: [Element] = []
    @usableFromInline @exclusivity(unchecked) var index = 0
    @exclusivity(unchecked) private var finished = false
    @usableFromInline let busy = Atomic<Bool>(false)

    init(queue: Buffer.SubscriberQueue, executor: AdapterExecutor) {
        self.queue = queue
        self.executor = executor
    }

    /// Values this subscriber's buffering policy dropped because its consumer was behind.
    /// Readable from any thread.
    public var droppedCount: Int { queue.dropped.load(ordering: .relaxed) }

    deinit {
        let queue = self.queue
        executor.queue.async { queue.leave() }
    }

    /// The next value; nil once the buffer finished normally or the task was cancelled;
    /// throws the buffer's error after the values queued before it.
    @inlinable
    nonisolated(nonsending) public func next() async throws -> Element? {
        precondition(!busy.exchange(true, ordering: .acquiring), "a MulticastSubscription was iterated from two tasks at once")
        if index < batch.count {
            let value = batch[index]
            index += 1
            busy.store(false, ordering: .releasing)
            return value
        }
        defer { busy.store(false, ordering: .releasing) }
        return try await refill()
    }

    /// The next value of the batch in hand without suspending, or nil when it is used up
    /// (then `next()` fetches the next batch): the per-value path of a consumer that is behind.
    @inlinable
    public func nextBuffered() -> Element? {
        precondition(!busy.exchange(true, ordering: .acquiring), "a MulticastSubscription was iterated from two tasks at once")
        defer { busy.store(false, ordering: .releasing) }
        guard index < batch.count else { return nil }
        let value = batch[index]
        index += 1
        return value
    }

    @usableFromInline
    nonisolated(nonsending) func refill() async throws -> Element? {
        if finished { return nil }
        batch.removeAll(keepingCapacity: true)
        index = 0
        let drained = batch
        batch = []
        let queue = self.queue, adapterQueue = executor.queue
        // Not `Waiters`: the one consumer waits off the executor and hands its drained batch
        // back in the same hop; this is the per-batch hot path of every stream. Armed, the
        // producer serves it at its next value even while a burst keeps the queue busy, so
        // the consumer works on one batch while the next one fills.
        let delivery = await withTaskCancellationHandler {
            await withUnsafeContinuation { (c: UnsafeContinuation<Buffer.Delivery, Never>) in
                queue.arm(c, returning: drained)
                adapterQueue.async { queue.takeIfArmed() }
            }
        } onCancel: {
            adapterQueue.async { queue.cancel() }
        }
        switch delivery {
        case .values(let values, let start):
            batch = values
            index = start + 1
            return values[start]
        case .end(let error):
            finished = true
            if let error { throw error }
            return nil
        }
    }

    /// This subscription as an `AsyncThrowingStream` (one consumer at a time).
    public func stream() -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(unfolding: { try await self.next() })
    }
}
