import BLECore
import Synchronization

/// A characteristic's notifications or indications, from `Peripheral.subscribe(to:)` (the
/// bytes) or `subscribe(to:as:)` (decoded), subscribed before it is returned.
/// Values are handed over in batches. The consumer's task
/// waits only when nothing is buffered; once woken it takes everything buffered in one hop
/// and iterates it without synchronising, so a consumer that is behind catches up at the
/// cost of a read from an array per value. One task iterates it at a time.
///
///     let readings = try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self)
///     for try await r in readings { print(r.beatsPerMinute) }
///     print(readings.droppedCount)   // what the buffering policy dropped
public struct NotificationStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = any Error
    @usableFromInline let source: LazySubscription
    /// Decodes each value; nil when the values are the bytes themselves (`Element` is
    /// `[UInt8]`): a closure call and a reference count less per value.
    @usableFromInline let transform: (@Sendable ([UInt8]) throws -> Element)?

    /// Values the stream's buffering policy dropped because its consumer was behind (0
    /// before iteration starts). Readable from any task.
    public var droppedCount: Int { source.droppedCount }

    public func makeAsyncIterator() -> Iterator { Iterator(source: source, transform: transform) }

    init(source: LazySubscription, transform: @escaping @Sendable ([UInt8]) throws -> Element) {
        self.source = source; self.transform = transform
    }

    /// Iterates the stream; `next()` throws the stream's end (a disconnect, a value that does
    /// not decode, `StreamError.consumerTooSlow`) after the values buffered before it.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = any Error
        @usableFromInline let source: LazySubscription
        @usableFromInline let transform: (@Sendable ([UInt8]) throws -> Element)?

        init(source: LazySubscription, transform: (@Sendable ([UInt8]) throws -> Element)?) {
            self.source = source; self.transform = transform
        }

        public mutating func next() async throws -> Element? {
            if let bytes = source.nextBuffered() { return try value(bytes) }
            guard let bytes = try await source.next() else { return nil }
            return try value(bytes)
        }

        /// Inlinable: a value already in hand is returned without an async call.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> Element? {
            if let bytes = source.nextBuffered() { return try value(bytes) }
            guard let bytes = try await source.next() else { return nil }
            return try value(bytes)
        }

        /// Without a transform `Element` is `[UInt8]` (see `NotificationStream.init(bytes:)`):
        /// the cast is folded away where the iterator is specialised.
        @inlinable
        func value(_ bytes: [UInt8]) throws -> Element {
            guard let transform else { return bytes as! Element }
            return try transform(bytes)
        }
    }
}

extension NotificationStream where Element == [UInt8] {
    /// The bytes as they arrive: no transform.
    init(bytes source: LazySubscription) {
        self.source = source
        self.transform = nil
    }
}

/// The subscription behind a `NotificationStream`: subscribes on the first `next()` unless
/// it was made subscribed (`subscribe(to:)`; the seed's `notifications(for:)` subscribes
/// lazily), then reads the subscriber's batches directly
/// (no stream in between).
@usableFromInline
final class LazySubscription: @unchecked Sendable { // `subscription` belongs to the stream's single consumer, one `next()` at a time; `shared` is behind a lock
    let peripheral: Peripheral
    let characteristic: CharacteristicIdentifier
    let indications: Bool
    let bufferingPolicy: StreamBufferingPolicy
    // Unchecked: only the stream's one consumer touches it, one `next()` at a time.
    @usableFromInline @exclusivity(unchecked) var subscription: MulticastSubscription<[UInt8]>? {
        didSet { unretained = subscription.map(Unmanaged.passUnretained) }
    }
    /// `subscription` without its reference count, for the per-value path: `subscription`
    /// keeps it alive and is set once, never cleared.
    @usableFromInline @exclusivity(unchecked) var unretained: Unmanaged<MulticastSubscription<[UInt8]>>?
    /// The same subscription for `droppedCount`, read from any task (never on the value path).
    private let shared = Mutex<MulticastSubscription<[UInt8]>?>(nil)

    init(peripheral: Peripheral, characteristic: CharacteristicIdentifier, indications: Bool, bufferingPolicy: StreamBufferingPolicy,
         subscribed: MulticastSubscription<[UInt8]>? = nil) {
        self.peripheral = peripheral; self.characteristic = characteristic; self.indications = indications
        self.bufferingPolicy = bufferingPolicy
        subscription = subscribed
        unretained = subscribed.map(Unmanaged.passUnretained)
        shared.withLock { $0 = subscribed }
    }

    var droppedCount: Int { shared.withLock { $0?.droppedCount ?? 0 } }

    /// A value of the batch in hand, without suspending (see `MulticastSubscription.nextBuffered`).
    @inlinable
    func nextBuffered() -> [UInt8]? { unretained?._withUnsafeGuaranteedRef { $0.nextBuffered() } }

    @usableFromInline
    nonisolated(nonsending) func next() async throws -> [UInt8]? {
        if let subscription { return try await subscription.next() }
        let s = try await peripheral.subscription(to: characteristic, indications: indications, bufferingPolicy: bufferingPolicy)
        subscription = s
        shared.withLock { $0 = s }
        return try await s.next()
    }
}

extension StreamBufferingPolicy {
    /// The policy of notification and indication streams unless one is given: the newest
    /// 1,024 values (about one second of the densest link). Notifications beyond it drop the
    /// oldest, counted; indications wait for room before they are confirmed.
    public static var notificationDefault: StreamBufferingPolicy { .bufferingNewest(1024) }
}
