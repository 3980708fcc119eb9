import BLECore
import Dispatch
import Testing

/// `AdapterExecutor.runIsolated` (behind `enter(on:)`) trusts one fact, checked by its
/// precondition: the caller runs on the executor's queue.
@Suite struct AdapterExecutorTests {
    actor Counter {
        nonisolated let executor: AdapterExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var value = 0
        init(executor: AdapterExecutor) { self.executor = executor }
        func bump() -> Int { value += 1; return value }
    }

    @Test func isOnQueueIsTrueOnTheQueueOnlyAndOnlyForItsOwnExecutor() async {
        let executor = AdapterExecutor(label: "executor-test")
        let other = AdapterExecutor(label: "executor-test-other")
        #expect(!executor.isOnQueue, "a test task does not run on the adapter queue")
        let seen = await withCheckedContinuation { c in
            executor.queue.async { c.resume(returning: (executor.isOnQueue, other.isOnQueue)) }
        }
        #expect(seen == (true, false))
    }

    @Test func enterRunsIsolatedOnTheQueue() async {
        let executor = AdapterExecutor(label: "executor-test")
        let counter = Counter(executor: executor)
        let values = await withCheckedContinuation { c in
            executor.queue.async {
                let first = counter.enter(on: executor) { $0.bump() }
                executor.runIsolated(counter, 1) { counter, n in for _ in 0..<n { _ = counter.bump() } }
                c.resume(returning: (first, counter.enter(on: executor) { $0.value }))
            }
        }
        #expect(values == (1, 2))
    }

    @Test func enterOffTheQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let executor = AdapterExecutor(label: "executor-test")
            let counter = Counter(executor: executor)
            _ = counter.enter(on: executor) { $0.bump() }
        }
    }
}
