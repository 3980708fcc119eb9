/// The multicast of the stack's low-rate streams: any number of subscribers, each an
/// `AsyncStream` with its own `StreamBufferingPolicy`. Adapter state, connection lifecycle
/// and scan results use it; notifications, the hot stream, use `MulticastBuffer`, which hands
/// values over in batches.
///
/// All calls happen on the adapter's executor (the owning actor calls it). A subscriber that
/// stops iterating is removed through `onTermination`, which may fire on any thread, so the
/// removal is dispatched onto the adapter queue instead of taking a lock.
///
///     let states = Broadcaster<AdapterState>(executor: executor, replay: .latest)
///     let stream = states.subscribe()      // a late subscriber first sees the current value
///     states.yield(.poweredOn)
package final class Broadcaster<Element: Sendable>: @unchecked Sendable { // mutated only on the adapter queue
    public enum Replay: Sendable {
        /// Subscribers see only what is yielded after they subscribe.
        case none
        /// A new subscriber first receives the latest value (for state streams).
        case latest
    }

    @usableFromInline
    enum Sink {
        case plain(AsyncStream<Element>.Continuation)
        case throwing(AsyncThrowingStream<Element, any Error>.Continuation)

        /// False when the stream's buffer dropped `value`.
        @inlinable @discardableResult
        func yield(_ value: Element) -> Bool {
            switch self {
            case .plain(let c): if case .dropped = c.yield(value) { return false }
            case .throwing(let c): if case .dropped = c.yield(value) { return false }
            }
            return true
        }

        func finish(_ error: (any Error)?) {
            switch self {
            case .plain(let c): c.finish()
            case .throwing(let c): c.finish(throwing: error)
            }
        }
    }

    let executor: AdapterExecutor
    @usableFromInline let replay: Replay
    @usableFromInline var sinks: [UInt64: Sink] = [:]
    /// The limits of the subscribers whose policy is `endingWhenFull`, by id.
    @usableFromInline var endingLimits: [UInt64: Int] = [:]
    private var nextID: UInt64 = 0
    @usableFromInline var latest: Element?
    private var ended: (any Error)??
    /// Called on the adapter queue when the number of subscribers changes (e.g. to stop a scan
    /// or clear a CCCD when the last subscriber leaves).
    public var onSubscriberCountChange: (@Sendable (Int) -> Void)?

    public init(executor: AdapterExecutor, replay: Replay = .none) {
        self.executor = executor
        self.replay = replay
    }

    public var subscriberCount: Int { sinks.count }
    public var latestValue: Element? { latest }

    /// A new stream of the values yielded from now on (preceded by the latest one with
    /// `.latest`, or by `history`, oldest first, when given: a state stream's story so far).
    public func subscribe(bufferingPolicy: StreamBufferingPolicy = .unbounded, history: [Element]? = nil) -> AsyncStream<Element> {
        let (stream, c) = AsyncStream<Element>.makeStream(bufferingPolicy: bufferingPolicy.plain())
        c.onTermination = terminationHandler(add(.plain(c), bufferingPolicy, history: history))
        return stream
    }

    /// Like `subscribe`, for streams that end with an error (a disconnect, a lost transport).
    public func subscribeThrowing(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncThrowingStream<Element, any Error> {
        let (stream, c) = AsyncThrowingStream<Element, any Error>.makeStream(bufferingPolicy: bufferingPolicy.throwing())
        c.onTermination = terminationHandler(add(.throwing(c), bufferingPolicy))
        return stream
    }

    private func add(_ sink: Sink, _ policy: StreamBufferingPolicy, history: [Element]? = nil) -> UInt64? {
        if let history {
            for value in history { sink.yield(value) }
        } else if replay == .latest, let latest {
            sink.yield(latest)
        }
        if let ended {
            sink.finish(ended)
            return nil
        }
        let id = nextID
        nextID += 1
        sinks[id] = sink
        if case .endingWhenFull(let n) = policy { endingLimits[id] = max(0, n) }
        onSubscriberCountChange?(sinks.count)
        return id
    }

    private func terminationHandler(_ id: UInt64?) -> (@Sendable (Any) -> Void) {
        guard let id else { return { _ in } }
        let queue = executor.queue
        return { [weak self] _ in
            guard let self else { return }
            queue.async { self.remove(id) }
        }
    }

    private func remove(_ id: UInt64) {
        endingLimits[id] = nil
        guard sinks.removeValue(forKey: id) != nil else { return }
        onSubscriberCountChange?(sinks.count)
    }

    /// Delivers `value` to every subscriber.
    @inlinable public func yield(_ value: Element) { deliver(value) }

    /// Inlinable so that it is specialised for the element type in the calling module: the
    /// unspecialised loop instantiates generic metadata on every call (measured: most of the
    /// cost of a notification with no subscriber).
    @inlinable func deliver(_ value: Element) {
        if replay == .latest { latest = value }
        if sinks.isEmpty { return }
        if endingLimits.isEmpty {
            for sink in sinks.values { sink.yield(value) }
            return
        }
        for (id, sink) in sinks where !sink.yield(value) { overflowed(id) }
    }

    /// A subscriber's buffer dropped a value: under `endingWhenFull` the consumer is too far
    /// behind, and its stream ends after what it holds.
    @usableFromInline func overflowed(_ id: UInt64) {
        guard let limit = endingLimits[id], let sink = sinks[id] else { return }
        sink.finish(StreamError.consumerTooSlow(stream: "a stream of \(Element.self)", limit: limit))
        remove(id)
    }

    /// Ends every stream (throwing streams with `error`); later subscribers get an ended stream.
    public func finish(throwing error: (any Error)? = nil) {
        ended = .some(error)
        let all = sinks
        sinks.removeAll()
        endingLimits.removeAll()
        for sink in all.values { sink.finish(error) }
        if !all.isEmpty { onSubscriberCountChange?(0) }
    }

    /// Ends the current streams but accepts new subscribers afterwards (a link that will reconnect).
    public func finishCurrent(throwing error: (any Error)? = nil) {
        let all = sinks
        sinks.removeAll()
        endingLimits.removeAll()
        for sink in all.values { sink.finish(error) }
        if !all.isEmpty { onSubscriberCountChange?(0) }
    }
}
