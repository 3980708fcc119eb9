import BLECore

/// The two ways a test reaches state confined to an adapter's queue, for every test target:
/// `onQueue` from a thread of the test's own (it blocks that thread until `body` has run),
/// `hop` from async code (it suspends instead, so no thread of the cooperative pool waits).
///
///     let count = executor.onQueue { buffer.subscriberCount }
///     let sent = await executor.hop { channel.sent }
extension AdapterExecutor {
    /// Runs `body` on the queue and returns its result. Never call it on the queue itself.
    package func onQueue<T>(_ body: () throws -> T) rethrows -> T {
        try queue.sync(execute: body)
    }

    /// Runs `body` on the queue from async code and returns its result.
    package func hop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in queue.async { continuation.resume(returning: body()) } }
    }
}
