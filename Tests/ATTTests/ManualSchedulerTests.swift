import Testing
import Synchronization
import BLETestSupport
import ATT
import BLECore

@Suite(.timeLimit(.minutes(1)))
struct ManualSchedulerTests {
    @Test func runsDueWorkInDeadlineOrderOnItsQueue() async {
        let executor = AdapterExecutor(label: "manual-scheduler-test")
        let scheduler = ManualScheduler(queue: executor.queue)
        let log = Mutex<[String]>([])
        _ = scheduler.schedule(after: .seconds(3)) { log.withLock { $0.append("3s on queue: \(executor.isOnQueue)") } }
        _ = scheduler.schedule(after: .seconds(1)) { log.withLock { $0.append("1s at \(scheduler.elapsed)") } }
        let cancelled = scheduler.schedule(after: .seconds(2)) { log.withLock { $0.append("cancelled") } }
        cancelled.cancel()
        _ = scheduler.schedule(after: .seconds(10)) { log.withLock { $0.append("10s") } }

        await scheduler.advance(by: .milliseconds(999))
        #expect(log.withLock { $0 }.isEmpty)
        #expect(scheduler.elapsed == .milliseconds(999))
        #expect(scheduler.now() == scheduler.origin + .milliseconds(999))
        await scheduler.advance(by: .seconds(3))
        #expect(log.withLock { $0 } == ["1s at 1.0 seconds", "3s on queue: true"])
        #expect(await scheduler.pendingCount() == 1)
    }

    @Test func workScheduledByDueWorkRunsInTheSameAdvance() async {
        let executor = AdapterExecutor(label: "manual-scheduler-test")
        let scheduler = ManualScheduler(queue: executor.queue)
        let fired = Mutex(0)
        _ = scheduler.schedule(after: .seconds(1)) {
            fired.withLock { $0 += 1 }
            _ = scheduler.schedule(after: .seconds(1)) { fired.withLock { $0 += 10 } }
        }
        await scheduler.advance(by: .seconds(2))
        #expect(fired.withLock { $0 } == 11)
        #expect(scheduler.elapsed == .seconds(2))
    }
}
