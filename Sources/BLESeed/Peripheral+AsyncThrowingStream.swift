import BLECore
import GATTClient
extension Peripheral {
    /// Notifications decoded as `T`, as the `AsyncThrowingStream` that BLESwift's
    /// `notifications(for:)` returns: chosen where the type context asks for one, so code
    /// written for that API compiles unchanged.
    ///
    ///     let readings: AsyncThrowingStream<HeartRateMeasurement, Error> = peripheral.notifications(for: measurement)
    ///
    /// It is a `NotificationStream<T>` as `subscribe(to:as:)` gives, except that it subscribes
    /// when iteration starts, pulled value by value (no buffer or task of its own): the same
    /// subscription, bound and end. It has no
    /// `droppedCount`; `droppedValueCount(for:)` counts what the buffering policy dropped.
    public nonisolated func notifications<T: GATTDecodable & Sendable>(
        for characteristic: CharacteristicIdentifier, bufferingPolicy: StreamBufferingPolicy = .notificationDefault
    ) -> AsyncThrowingStream<T, any Error> {
        let pull = NotificationPull<T>(lazyStream(characteristic, indications: false, bufferingPolicy, decoder(characteristic)))
        return AsyncThrowingStream(unfolding: { try await pull.next() })
    }
}

/// A `NotificationStream`'s iterator, advanced by `AsyncThrowingStream(unfolding:)`.
final class NotificationPull<Element: Sendable>: @unchecked Sendable { // one task iterates the stream at a time (as NotificationStream requires), so `iterator` has one user
    private var iterator: NotificationStream<Element>.Iterator

    init(_ stream: NotificationStream<Element>) { iterator = stream.makeAsyncIterator() }

    func next() async throws -> Element? { try await iterator.next() }
}
