import BLECore
import BLETestSupport
import Testing

/// The waiting primitive on its own: an owner actor on an adapter executor, time from a
/// `ManualScheduler`, every step awaited as an event (the owner reports each waiter it adds).
@Suite struct WaitersTests {
    struct Failure: Error, Equatable { let why: String }

    actor Owner {
        nonisolated let executor = AdapterExecutor(label: "waiters-test")
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        nonisolated let scheduler: ManualScheduler
        let waiters: Waiters<Int, Failure>
        /// Ids as they are added, and ids whose `cancelled` result was asked for.
        let addedIDs: AsyncStream<UInt64>
        private let addedSink: AsyncStream<UInt64>.Continuation
        var cancelledIDs: [UInt64] = []

        init() {
            scheduler = ManualScheduler(queue: executor.queue)
            waiters = Waiters(executor: executor, scheduler: scheduler)
            (addedIDs, addedSink) = AsyncStream.makeStream()
        }

        func wait(deadline: Duration? = nil) async -> Result<Int, Failure> {
            let sink = addedSink
            return await waiters.wait(deadline: deadline.map { ($0, .failure(Failure(why: "deadline"))) },
                                      cancelled: { [weak self] id in
                                          self?.assumeIsolated { $0.cancelledIDs.append(id) }
                                          return .failure(Failure(why: "cancelled"))
                                      }) { id in sink.yield(id) }
        }

        /// Waits after cancelling its own task first: the "cancelled before added" case.
        func waitCancelledFirst() async -> Result<Int, Failure> {
            withUnsafeCurrentTask { $0?.cancel() }
            return await wait()
        }

        func resume(_ id: UInt64, _ result: Result<Int, Failure>) -> Bool { waiters.resume(id, with: result) }
        func resumeFirst(_ result: Result<Int, Failure>) -> Bool { waiters.resumeFirst(with: result) }
        func failAll(_ why: String) { waiters.failAll(Failure(why: why)) }
        var count: Int { waiters.count }
    }

    /// Starts `n` waiters, returning their tasks and ids in the order they were added.
    func start(_ n: Int, on owner: Owner, deadline: Duration? = nil) async -> [(Task<Result<Int, Failure>, Never>, UInt64)] {
        var it = owner.addedIDs.makeAsyncIterator()
        var out: [(Task<Result<Int, Failure>, Never>, UInt64)] = []
        for _ in 0..<n {
            let task = Task { await owner.wait(deadline: deadline) }
            out.append((task, await it.next()!))
        }
        return out
    }

    @Test func resumeGivesTheWaiterItsResultOnce() async {
        let owner = Owner()
        let (task, id) = await start(1, on: owner)[0]
        #expect(await owner.resume(id, .success(7)))
        #expect(await task.value == .success(7))
        #expect(await owner.resume(id, .success(8)) == false, "a waiter is resumed once")
        #expect(await owner.count == 0)
    }

    @Test func resumeFirstIsFirstInFirstOut() async {
        let owner = Owner()
        let started = await start(3, on: owner)
        #expect(await owner.resume(started[0].1, .success(0)))
        #expect(await owner.resumeFirst(.success(1)), "skips the id already resumed")
        #expect(await started[1].0.value == .success(1))
        #expect(await owner.resumeFirst(.success(2)))
        #expect(await started[2].0.value == .success(2))
        #expect(await owner.resumeFirst(.success(3)) == false)
    }

    @Test func failAllFailsEveryWaiter() async {
        let owner = Owner()
        let started = await start(3, on: owner)
        await owner.failAll("link closed")
        for (task, _) in started { #expect(await task.value == .failure(Failure(why: "link closed"))) }
        #expect(await owner.count == 0)
    }

    @Test func aTaskCancelledBeforeWaitingGetsItsCancelledResultWithoutBeingAdded() async {
        let owner = Owner()
        let result = await Task { await owner.waitCancelledFirst() }.value
        #expect(result == .failure(Failure(why: "cancelled")))
        #expect(await owner.cancelledIDs.count == 1)
        #expect(await owner.count == 0)
        // Nothing was added: the next waiter is the first id the stream reports.
        let (task, id) = await start(1, on: owner)[0]
        #expect(id == 1)
        #expect(await owner.resume(id, .success(1)))
        _ = await task.value
    }

    @Test func cancellingAWaitingTaskTakesItOutAndResumeAfterwardsDoesNothing() async {
        let owner = Owner()
        let started = await start(2, on: owner)
        started[0].0.cancel()
        #expect(await started[0].0.value == .failure(Failure(why: "cancelled")))
        #expect(await owner.cancelledIDs == [started[0].1])
        #expect(await owner.resume(started[0].1, .success(1)) == false, "resume after cancel is a no-op")
        #expect(await owner.count == 1, "the other waiter still waits")
        #expect(await owner.resumeFirst(.success(2)))
        #expect(await started[1].0.value == .success(2))
    }

    @Test func cancellingAfterTheResumeChangesNothing() async {
        let owner = Owner()
        let (task, id) = await start(1, on: owner)[0]
        #expect(await owner.resume(id, .success(5)))
        task.cancel()
        #expect(await task.value == .success(5))
        #expect(await owner.cancelledIDs.isEmpty)
    }

    @Test func theDeadlineResumesTheWaiterOnTheSchedulersClock() async {
        let owner = Owner()
        let (task, id) = await start(1, on: owner, deadline: .seconds(2))[0]
        await owner.scheduler.advance(by: .milliseconds(1999))
        #expect(await owner.count == 1, "not due yet")
        await owner.scheduler.advance(by: .milliseconds(1))
        #expect(await task.value == .failure(Failure(why: "deadline")))
        #expect(await owner.resume(id, .success(1)) == false)
    }

    @Test func resumingBeforeTheDeadlineCancelsItsTimer() async {
        let owner = Owner()
        let (task, id) = await start(1, on: owner, deadline: .seconds(2))[0]
        #expect(await owner.scheduler.pendingCount() == 1)
        #expect(await owner.resume(id, .success(3)))
        #expect(await task.value == .success(3))
        #expect(await owner.scheduler.pendingCount() == 0)
        await owner.scheduler.advance(by: .seconds(5))
        #expect(await owner.count == 0)
    }

    @Test func cancellingBeforeTheDeadlineCancelsItsTimer() async {
        let owner = Owner()
        let (task, _) = await start(1, on: owner, deadline: .seconds(2))[0]
        task.cancel()
        #expect(await task.value == .failure(Failure(why: "cancelled")))
        #expect(await owner.scheduler.pendingCount() == 0)
    }
}
