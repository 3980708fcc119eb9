import Synchronization

extension Central {
    /// Waits until the closed transport has released its endpoint (`HCITransport.whenReleased`),
    /// at most `timeout` on the central's timer source, and no longer than the calling task
    /// is not cancelled (the release goes on without the caller).
    func waitForTransportRelease(timeout: Duration) async {
        let transport = host.transport
        let logger = options.logger
        let once = ResumeOnceVoid()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                once.set(c)
                let timer = scheduler.schedule(after: timeout) {
                    if once.resume() {
                        logger.log(.warning, "\(transport.name) did not release its endpoint within \(Int(timeout.nanoseconds / 1_000_000)) ms of closing")
                    }
                }
                transport.whenReleased {
                    once.resume()
                    timer.cancel()
                }
            }
        } onCancel: {
            once.resume()
        }
    }
}

/// Resumes a continuation once, from whichever of a completion or a timer comes first (each
/// may run on any thread).
final class ResumeOnceVoid: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Void, Never>?, done: Bool)>((nil, false))

    func set(_ c: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { s -> Bool in
            if s.done { return true }
            s.continuation = c
            return false
        }
        if resumeNow { c.resume() }
    }

    /// Resumes the continuation; true for the first call only.
    @discardableResult
    func resume() -> Bool {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.done { return nil }
            s.done = true
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
        return c != nil
    }
}
