import Dispatch
import Synchronization

/// Waits bounded by real time, for tests whose virtual clock never moves: a wait that ignores
/// cancellation shows up as a missing result instead of hanging the run.
///
///     let result = await outcome(of: Task { try await central.connect(peer) }, within: 10)
public func outcome<T: Sendable, E: Error>(of task: Task<T, E>, within seconds: Double = 10) async -> Result<T, E>? {
    await withCheckedContinuation { (c: CheckedContinuation<Result<T, E>?, Never>) in
        let first = FirstResume(c)
        Task { first.resume(await task.result) }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { first.resume(nil) }
    }
}

/// The call did not end within the bound.
public struct StillRunning: Error, CustomStringConvertible {
    public var description: String { "the call did not end within the bound" }
}

/// The value of `task`, which must end within the bound (otherwise it is cancelled and
/// `StillRunning` is thrown).
public func value<T: Sendable>(of task: Task<T, any Error>, within seconds: Double = 10) async throws -> T {
    guard let result = await outcome(of: task, within: seconds) else {
        task.cancel()
        throw StillRunning()
    }
    return try result.get()
}

/// Runs `body` in a task bounded by real time.
@discardableResult
public func bounded<T: Sendable>(within seconds: Double = 10, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await value(of: Task { try await body() }, within: seconds)
}

/// Resumes a continuation with the first value given, from any thread.
final class FirstResume<V: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<V, Never>?>
    init(_ c: CheckedContinuation<V, Never>) { continuation = Mutex(c) }
    func resume(_ value: V) {
        continuation.withLock { c -> CheckedContinuation<V, Never>? in
            defer { c = nil }
            return c
        }?.resume(returning: value)
    }
}
