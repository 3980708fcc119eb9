import Dispatch
import Synchronization
import Testing
@testable import BLECore
@testable import BLETransport

/// The production timer: it fires on its queue, and a cancelled timer lets go of its work at
/// once (link churn cancels thousands of 30 s ATT timeouts a second; holding each closure
/// until its deadline grew resident memory by about 12 KB per connect/discover cycle).
@Suite("Dispatch timers")
struct DispatchTimerSchedulerTests {
    /// Calls `released` when the last reference to it goes.
    final class Token: Sendable {
        let released: @Sendable () -> Void
        init(released: @escaping @Sendable () -> Void) { self.released = released }
        deinit { released() }
    }

    @Test("A cancelled timer releases its closure long before the deadline")
    func cancelReleases() async {
        let queue = DispatchQueue(label: "timer-test")
        let scheduler = DispatchTimerScheduler(queue: queue)
        let released = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let once = Mutex(Optional(c))
            let token = Token { once.withLock { $0.take() }?.resume(returning: true) }
            let timer = scheduler.schedule(after: .seconds(60)) { _ = token }
            // Dispatch completes the cancellation on its own threads; 5 s bounds the wait.
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { once.withLock { $0.take() }?.resume(returning: false) }
            timer.cancel()
        }
        #expect(released, "a cancelled 60 s timer still held its closure after 5 s")
    }

    @Test("A timer fires once on its queue, and a timer cancelled first never fires")
    func firesOnce() async {
        let queue = DispatchQueue(label: "timer-test")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let scheduler = DispatchTimerScheduler(queue: queue)
        let fired = Atomic<Int>(0)
        let cancelledFired = Atomic<Int>(0)
        let cancelled = scheduler.schedule(after: .milliseconds(5)) { cancelledFired.add(1, ordering: .relaxed) }
        cancelled.cancel()
        let onQueue = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let once = Mutex(Optional(c))
            // The timer under test, and a 5 s fallback so the wait is bounded.
            _ = scheduler.schedule(after: .milliseconds(20)) {
                fired.add(1, ordering: .relaxed)
                once.withLock { $0.take() }?.resume(returning: DispatchQueue.getSpecific(key: key) == true)
            }
            queue.asyncAfter(deadline: .now() + 5) { once.withLock { $0.take() }?.resume(returning: false) }
        }
        #expect(onQueue)
        // Later than both deadlines: neither fires again.
        try? await Task.sleep(for: .milliseconds(50))
        queue.sync {}
        #expect(fired.load(ordering: .relaxed) == 1)
        #expect(cancelledFired.load(ordering: .relaxed) == 0)
    }
}
