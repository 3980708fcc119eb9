import Dispatch
import Synchronization
@_spi(Internals) import BLECore
import BLETransport

/// A `waitForCount` that did not see its count.
public enum WaitersCountError: Error, CustomStringConvertible, Equatable {
    /// The count never met the condition within the real-time bound.
    case timeout(waitingFor: String, milliseconds: Int, lastCount: Int)
    /// The waiting task was cancelled.
    case cancelled(waitingFor: String)

    public var description: String {
        switch self {
        case .timeout(let what, let ms, let last):
            "no change of the waiters brought \(what) within \(ms) ms (the count stayed at \(last)): the call under test never parked, or left early; check that it reaches its wait"
        case .cancelled(let what):
            "the wait for \(what) was cancelled before the waiters got there"
        }
    }
}

extension Waiters {
    /// Returns once `condition` holds for the number of callers waiting here: checked at once,
    /// then after every change (resumed by the change itself, never by polling). Gives up
    /// after a real-time `timeout` (virtual time does not move it) or when the task is
    /// cancelled. The way a test learns that a call has parked ("the command is queued").
    ///
    ///     try await host.commandWaiters.waitForCount("the command queued") { $0 >= 1 }
    public func waitForCount(_ what: String, timeout: Duration = .seconds(5),
                             _ condition: @escaping @Sendable (Int) -> Bool) async throws(WaitersCountError) {
        let ms = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let first = OneShot<Result<Void, WaitersCountError>>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Void, WaitersCountError>, Never>) in
                first.set(c)
                executor.queue.async {
                    if condition(self.count) { return first.resume(.success(())) }
                    if Task.isCancelled { return first.resume(.failure(.cancelled(waitingFor: what))) }
                    // The observer's token, set right after the observer is made.
                    let token = QueueConfined<UInt64>(0, on: self.executor.queue)
                    token.value = self.addCountObserver { count in
                        guard condition(count) else { return }
                        self.removeCountObserver(token.value)
                        first.resume(.success(()))
                    }
                    self.executor.queue.asyncAfter(deadline: .now() + .milliseconds(ms)) {
                        self.removeCountObserver(token.value)
                        first.resume(.failure(.timeout(waitingFor: what, milliseconds: ms, lastCount: self.count)))
                    }
                }
            }
        } onCancel: {
            // Its observer goes on the next change or when the bound passes.
            first.resume(.failure(.cancelled(waitingFor: what)))
        }
        try result.get()
    }
}

/// Resumes a continuation, given before or after, with the first value, from any thread.
private final class OneShot<V: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<V, Never>?, early: V?, done: Bool)>((nil, nil, false))
    func set(_ c: CheckedContinuation<V, Never>) {
        let early = state.withLock { s -> V? in
            guard let early = s.early else { s.continuation = c; return nil }
            s.early = nil
            return early
        }
        if let early { c.resume(returning: early) }
    }
    func resume(_ value: V) {
        let c = state.withLock { s -> CheckedContinuation<V, Never>? in
            guard !s.done else { return nil }
            s.done = true
            guard let c = s.continuation else { s.early = value; return nil }
            s.continuation = nil
            return c
        }
        c?.resume(returning: value)
    }
}
