/// The events of one `Central.scan` subscriber, one `ScanEvent` at a time.
///
/// Events are handed over in batches: every report of one transport read reaches the
/// consumer's task in one wake-up, which then iterates them without synchronising (a value of
/// the batch in hand costs no async call and no lock). The subscriber's buffering policy
/// (`ScanOptions.bufferingPolicy`) bounds the events waiting for the consumer; what it drops
/// is counted in `droppedCount`. One task iterates it at a time. The scan subscription ends
/// when the stream and its iterator are gone (breaking out of the loop that iterates it) or
/// the iterating task is cancelled.
///
///     let events = await central.scan(options: ScanOptions(bufferingPolicy: .bufferingNewest(64)))
///     for try await event in events { print(event) }
///     print(events.droppedCount)   // what the buffering policy dropped
public struct ScanStream: AsyncSequence, Sendable {
    public typealias Element = ScanEvent
    public typealias Failure = any Error

    @usableFromInline let subscription: MulticastSubscription<ScanEvent>

    init(_ subscription: MulticastSubscription<ScanEvent>) { self.subscription = subscription }

    /// Events the buffering policy dropped because the consumer was behind. Readable from any task.
    public var droppedCount: Int { subscription.droppedCount }

    public func makeAsyncIterator() -> Iterator { Iterator(subscription: subscription) }

    /// Iterates the stream; `next()` throws the scan's end (`ScanError`, the controller's
    /// `HCIError`, `StreamError.consumerTooSlow`) after the events buffered before it.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = any Error
        @usableFromInline let subscription: MulticastSubscription<ScanEvent>

        init(subscription: MulticastSubscription<ScanEvent>) { self.subscription = subscription }

        public mutating func next() async throws -> ScanEvent? {
            if let event = subscription.nextBuffered() { return event }
            return try await subscription.next()
        }

        /// Inlinable: an event already in hand is returned without an async call.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> ScanEvent? {
            if let event = subscription.nextBuffered() { return event }
            return try await subscription.next()
        }
    }
}

extension ScanStream {
    /// A stream that ends at once with `error` (nil: normally), for a scan that cannot start.
    static func ended(_ error: (any Error)?, executor: AdapterExecutor) -> ScanStream {
        let buffer = MulticastBuffer<ScanEvent>(executor: executor, name: "scan events")
        buffer.finish(throwing: error)
        return ScanStream(buffer.subscribe())
    }
}
