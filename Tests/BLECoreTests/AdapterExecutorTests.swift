import BLECore
import Dispatch
import Testing

/// The two ways code on the adapter queue runs isolated to an actor of the adapter:
/// `assumeIsolated` (the runtime asks the actor's own executor, which answers from its
/// queue), and `AdapterExecutor.runIsolated` for the per-packet entry, which trusts one fact,
/// checked by its precondition: the caller runs on the executor's queue.
@Suite struct AdapterExecutorTests {
    actor Counter: AdapterIsolated {
        nonisolated let executor: AdapterExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var value = 0
        init(executor: AdapterExecutor) { self.executor = executor }
        func bump() -> Int { value += 1; return value }
        /// `assumeIsolated` from synchronous code (it is unavailable in an async body).
        nonisolated func bumpAssumingIsolation() -> Int { assumeIsolated { $0.bump() } }
    }

    /// A second actor of the same executor, reaching into a `Counter` synchronously.
    actor Neighbour {
        nonisolated let executor: AdapterExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        let counter: Counter
        init(executor: AdapterExecutor, counter: Counter) { self.executor = executor; self.counter = counter }
        func bumpTwice() -> [Int] { [counter.assumeIsolated { $0.bump() }, counter.assumeIsolated { $0.bump() }] }
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

    @Test func runIsolatedRunsIsolatedOnTheQueue() async {
        let executor = AdapterExecutor(label: "executor-test")
        let counter = Counter(executor: executor)
        let values = await withCheckedContinuation { c in
            executor.queue.async {
                let first = counter.runIsolated(1) { counter, n in counter.bump() * n }
                counter.runIsolated(2) { counter, n in for _ in 0..<n { _ = counter.bump() } }
                c.resume(returning: (first, counter.runIsolated(()) { counter, _ in counter.value }))
            }
        }
        #expect(values == (1, 3))
    }

    @Test func runIsolatedOffTheQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let executor = AdapterExecutor(label: "executor-test")
            let counter = Counter(executor: executor)
            _ = counter.runIsolated(()) { counter, _ in counter.bump() }
        }
    }

    @Test func assumeIsolatedHoldsInAPlainBlockOnTheQueue() async {
        let executor = AdapterExecutor(label: "executor-test")
        let counter = Counter(executor: executor)
        let values = await withCheckedContinuation { c in
            executor.queue.async {
                let first = counter.assumeIsolated { $0.bump() }
                c.resume(returning: (first, counter.assumeIsolated { $0.bump() }))
            }
        }
        #expect(values == (1, 2))
        #expect(await counter.value == 2)
    }

    @Test func assumeIsolatedHoldsFromAnotherActorOfTheSameExecutor() async {
        let executor = AdapterExecutor(label: "executor-test")
        let counter = Counter(executor: executor)
        let neighbour = Neighbour(executor: executor, counter: counter)
        #expect(await neighbour.bumpTwice() == [1, 2])
        #expect(await counter.value == 2)
    }

    @Test func assumeIsolatedOffTheQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let counter = Counter(executor: AdapterExecutor(label: "executor-test"))
            _ = counter.bumpAssumingIsolation()
        }
    }

    /// What a check of the queue alone cannot see: on the queue of one adapter, an actor of another
    /// adapter is not isolated, and `assumeIsolated` says so.
    @Test func assumeIsolatedOnAnotherAdaptersQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let here = AdapterExecutor(label: "executor-test")
            let counter = Counter(executor: AdapterExecutor(label: "executor-test-other"))
            here.queue.sync { _ = counter.bumpAssumingIsolation() }
        }
    }
}
