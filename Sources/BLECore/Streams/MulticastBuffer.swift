import Synchronization

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
/// consumer); values it drops are counted in `droppedCount` and logged.
///
///     let values = MulticastBuffer<[UInt8]>(executor: executor, name: "notifications of 0x0012")
///     let subscription = values.subscribe(bufferingPolicy: .bufferingNewest(16))   // on the adapter queue
///     values.yield([0x01])                                                          // on the adapter queue
///     while let v = try await subscription.next() { print(v) }                      // anywhere
public final class MulticastBuffer<Element: Sendable>: @unchecked Sendable { // mutated only on the adapter queue
    public let executor: AdapterExecutor
    /// Names the stream in log lines.
    public let name: String
    /// Where drops are reported (silent by default).
    public var logger: BLELogger
    // Unchecked exclusivity here and in SubscriberQueue: the state is confined to the adapter
    // queue, and the dynamic checks were a measurable part of a delivered value's cost.
    @usableFromInline @exclusivity(unchecked) var queues: [SubscriberQueue] = []
    private var ended: (any Error)??
    /// Values dropped by subscribers' buffering policies since the buffer was made.
    public internal(set) var droppedCount = 0
    /// Called on the adapter queue when the number of subscribers changes (e.g. to clear a
    /// CCCD when the last subscriber leaves).
    public var onSubscriberCountChange: (@Sendable (Int) -> Void)?

    public init(executor: AdapterExecutor, name: String, logger: BLELogger = .silent) {
        self.executor = executor
        self.name = name
        self.logger = logger
    }

    public var subscriberCount: Int { queues.count }
    /// True once `finish` was called: later subscribers get an ended subscription.
    public var isFinished: Bool { ended != nil }

    /// A new subscriber of the values yielded from now on. Call on the adapter queue.
    public func subscribe(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> MulticastSubscription<Element> {
        let queue = SubscriberQueue(bufferingPolicy)
        if let ended {
            queue.end = ended
        } else {
            queue.owner = self
            queues.append(queue)
            onSubscriberCountChange?(queues.count)
        }
        return MulticastSubscription(queue: queue, executor: executor)
    }

    /// Delivers `value` to every subscriber: a waiting one is resumed, the others queue it
    /// as their buffering policy allows. Call on the adapter queue.
    @inlinable
    public func yield(_ value: Element) {
        for queue in queues where !queue.push(value) {
            dropped(queue)
        }
    }

    @usableFromInline
    func dropped(_ queue: SubscriberQueue) {
        droppedCount += 1
        queue.dropped += 1
        let n = queue.dropped
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
        guard ended == nil else { return }
        ended = .some(error)
        finishCurrent(throwing: error)
    }

    /// Ends the current subscriptions (with `error`, or normally when nil) but accepts new
    /// subscribers afterwards: a link that will be restored. Call on the adapter queue.
    public func finishCurrent(throwing error: (any Error)? = nil) {
        let all = queues
        queues.removeAll()
        for queue in all { queue.finish(error) }
        if !all.isEmpty { onSubscriberCountChange?(0) }
    }

    func remove(_ queue: SubscriberQueue) {
        guard let i = queues.firstIndex(where: { $0 === queue }) else { return }
        queues.remove(at: i)
        onSubscriberCountChange?(queues.count)
    }

    /// What a consumer gets from one hop: a batch (from `start`) or the end.
    @usableFromInline
    enum Delivery: Sendable {
        case values([Element], start: Int)
        case end((any Error)?)
    }

    /// One subscriber's side on the adapter queue.
    @usableFromInline
    final class SubscriberQueue: @unchecked Sendable { // touched only on the adapter queue
        /// Most values queued at once; `Int.max` when unbounded.
        @usableFromInline let limit: Int
        /// When full: drop the oldest queued value (true) or the new one (false).
        @usableFromInline let keepNewest: Bool
        /// Queued values are `pending[head...]`.
        @usableFromInline @exclusivity(unchecked) var pending: [Element] = []
        @usableFromInline @exclusivity(unchecked) var head = 0
        /// An emptied array given back by the consumer, reused for the next batch.
        @usableFromInline @exclusivity(unchecked) var spare: [Element] = []
        @usableFromInline @exclusivity(unchecked) var waiter: UnsafeContinuation<Delivery, Never>?
        var end: (any Error)??
        var cancelled = false
        @usableFromInline var dropped = 0
        /// Strong while subscribed (a cycle with `queues` that `leave` and `finish` break):
        /// a weak reference would give the buffer a side table, and every retain of it on the
        /// per-value path would take the slow route.
        var owner: MulticastBuffer?

        let policy: StreamBufferingPolicy

        init(_ policy: StreamBufferingPolicy) {
            self.policy = policy
            switch policy {
            case .bufferingOldest(let n): limit = max(0, n); keepNewest = false
            case .bufferingNewest(let n): limit = max(0, n); keepNewest = true
            case .unbounded: limit = .max; keepNewest = false
            }
        }

        /// Queues or hands over `value`; false when the policy dropped a value.
        @inlinable
        func push(_ value: Element) -> Bool {
            if let waiter {
                // Nothing is queued while a consumer waits.
                self.waiter = nil
                var batch = spare
                spare = []
                batch.append(value)
                waiter.resume(returning: .values(batch, start: 0))
                return true
            }
            if pending.count - head < limit {
                pending.append(value)
                return true
            }
            if keepNewest, limit > 0 {
                pending.append(value)
                head += 1
                if head >= 32, head * 2 >= pending.count {
                    pending.removeFirst(head)
                    head = 0
                }
            }
            return false
        }

        /// The consumer's hop: everything queued, the end, or a wait for the next value.
        func take(returning drained: [Element], _ c: UnsafeContinuation<Delivery, Never>) {
            if spare.capacity < drained.capacity { spare = drained }
            if pending.count > head {
                let batch = pending, start = head
                pending = spare
                spare = []
                head = 0
                c.resume(returning: .values(batch, start: start))
            } else if cancelled {
                c.resume(returning: .end(nil))
            } else if let end {
                c.resume(returning: .end(end))
            } else {
                pending.removeAll(keepingCapacity: true)
                head = 0
                waiter = c
            }
        }

        func finish(_ error: (any Error)?) {
            owner = nil
            if end == nil { end = .some(error) }
            if let waiter {
                self.waiter = nil
                waiter.resume(returning: .end(error))
            }
        }

        /// The consuming task was cancelled: end the iteration and leave.
        func cancel() {
            cancelled = true
            pending.removeAll()
            head = 0
            if let waiter {
                self.waiter = nil
                waiter.resume(returning: .end(nil))
            }
            leave()
        }

        func leave() {
            owner?.remove(self)
            owner = nil
        }
    }
}

/// One subscriber of a `MulticastBuffer`: iterate it with `next()` from one task at a time.
/// Dropping it (or cancelling the task waiting in `next()`) unsubscribes it.
///
///     let subscription = buffer.subscribe()
///     while let value = try await subscription.next() { handle(value) }
public final class MulticastSubscription<Element: Sendable>: @unchecked Sendable { // `batch`, `index` and `finished` belong to the one iterating task (`busy` traps on concurrent use); `queue` is touched only on the adapter queue
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

    @usableFromInline
    nonisolated(nonsending) func refill() async throws -> Element? {
        if finished { return nil }
        batch.removeAll(keepingCapacity: true)
        index = 0
        let drained = batch
        batch = []
        let queue = self.queue, adapterQueue = executor.queue
        // Not `Waiters`: the one consumer waits off the executor and hands its drained batch
        // back in the same hop; this is the per-batch hot path of every stream.
        let delivery = await withTaskCancellationHandler {
            await withUnsafeContinuation { (c: UnsafeContinuation<Buffer.Delivery, Never>) in
                adapterQueue.async { queue.take(returning: drained, c) }
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
