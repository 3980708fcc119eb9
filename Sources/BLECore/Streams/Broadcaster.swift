import BLETransport

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
package final class Broadcaster<Element: Sendable>: Sendable {
    public enum Replay: Sendable {
        /// Subscribers see only what is yielded after they subscribe.
        case none
        /// A new subscriber first receives the latest value (for state streams).
        case latest
    }

    enum Sink {
        case plain(AsyncStream<Element>.Continuation)
        case throwing(AsyncThrowingStream<Element, any Error>.Continuation)

        /// False when the stream's buffer dropped `value`.
        @discardableResult
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
    let replay: Replay
    private struct State {
        var sinks: [UInt64: Sink] = [:]
        /// The limits of the subscribers whose policy is `endingWhenFull`, by id.
        var endingLimits: [UInt64: Int] = [:]
        var nextID: UInt64 = 0
        var latest: Element?
        var ended: (any Error)??
        var onSubscriberCountChange: (@Sendable (Int) -> Void)?
    }
    /// Touched only on the adapter queue.
    private let state: QueueConfined<State>

    public init(executor: AdapterExecutor, replay: Replay = .none) {
        self.executor = executor
        self.replay = replay
        self.state = QueueConfined(State(), on: executor.queue)
    }

    /// Called on the adapter queue when the number of subscribers changes (e.g. to stop a scan
    /// or clear a CCCD when the last subscriber leaves). Set on the adapter queue.
    public var onSubscriberCountChange: (@Sendable (Int) -> Void)? {
        get { state.value.onSubscriberCountChange }
        set { state.value.onSubscriberCountChange = newValue }
    }

    public var subscriberCount: Int { state.value.sinks.count }
    public var latestValue: Element? { state.value.latest }

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
        } else if replay == .latest, let latest = state.value.latest {
            sink.yield(latest)
        }
        if let ended = state.value.ended {
            sink.finish(ended)
            return nil
        }
        let id = state.value.nextID
        state.value.nextID += 1
        state.value.sinks[id] = sink
        if case .endingWhenFull(let n) = policy { state.value.endingLimits[id] = max(0, n) }
        subscriberCountChanged()
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
        state.value.endingLimits[id] = nil
        guard state.value.sinks.removeValue(forKey: id) != nil else { return }
        subscriberCountChanged()
    }

    /// Tells `onSubscriberCountChange` the count (outside the access to the state: the
    /// observer may call back in).
    private func subscriberCountChanged() {
        let count = state.value.sinks.count
        if let change = state.value.onSubscriberCountChange { change(count) }
    }

    /// Delivers `value` to every subscriber. Only the stack's own low-rate streams use a
    /// broadcaster, all in this module, so it is specialised where it is called.
    public func yield(_ value: Element) {
        if replay == .latest { state.value.latest = value }
        if state.value.sinks.isEmpty { return }
        let sinks = state.value.sinks
        if state.value.endingLimits.isEmpty {
            for sink in sinks.values { sink.yield(value) }
            return
        }
        for (id, sink) in sinks where !sink.yield(value) { overflowed(id) }
    }

    /// A subscriber's buffer dropped a value: under `endingWhenFull` the consumer is too far
    /// behind, and its stream ends after what it holds.
    private func overflowed(_ id: UInt64) {
        guard let limit = state.value.endingLimits[id], let sink = state.value.sinks[id] else { return }
        sink.finish(StreamError.consumerTooSlow(stream: "a stream of \(Element.self)", limit: limit))
        remove(id)
    }

    /// Ends every stream (throwing streams with `error`); later subscribers get an ended stream.
    public func finish(throwing error: (any Error)? = nil) {
        state.value.ended = .some(error)
        finishCurrent(throwing: error)
    }

    /// Ends the current streams but accepts new subscribers afterwards (a link that will reconnect).
    public func finishCurrent(throwing error: (any Error)? = nil) {
        let all = state.value.sinks
        state.value.sinks.removeAll()
        state.value.endingLimits.removeAll()
        for sink in all.values { sink.finish(error) }
        if !all.isEmpty, let change = state.value.onSubscriberCountChange { change(0) }
    }
}
