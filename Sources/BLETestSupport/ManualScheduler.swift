import Dispatch
import Synchronization
import BLECore
import BLETransport

/// A `TimerScheduler` whose clock only moves when a test calls `advance(by:)`: the way to
/// test timeouts (the 30-second ATT transaction timeout, connection timeouts...) without
/// waiting. Due work runs on the adapter queue given at init, in deadline order (then in
/// scheduling order), with `now()` equal to its deadline while it runs.
///
///     let scheduler = ManualScheduler(queue: channel.executor.queue)
///     let bearer = ATTBearer(channel: channel, scheduler: scheduler)
///     await scheduler.advance(by: .seconds(30))   // fires the transaction timeout
public final class ManualScheduler: TimerScheduler {
    /// The adapter queue the work runs on.
    public let queue: DispatchQueue
    private let clock = Atomic<UInt64>(0)
    private let onQueueKey = DispatchSpecificKey<Bool>()
    /// The timers not run yet, and the sequence number of the last one scheduled.
    private let confined: QueueConfined<(timers: [Entry], lastSequence: UInt64)>

    private final class Entry: ScheduledTimer {
        let deadline: UInt64
        let sequence: UInt64
        let work: @Sendable () -> Void
        let cancelled = Atomic<Bool>(false)
        init(deadline: UInt64, sequence: UInt64, work: @escaping @Sendable () -> Void) {
            self.deadline = deadline; self.sequence = sequence; self.work = work
        }
        func cancel() { cancelled.store(true, ordering: .relaxed) }
    }

    /// The instant `now()` returns before the first `advance`.
    public let origin: ContinuousClock.Instant

    /// A scheduler at time 0 whose work runs on `queue` (the adapter's).
    public init(queue: DispatchQueue) {
        origin = .now
        self.queue = queue
        confined = QueueConfined(([], 0), on: queue)
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// `origin` plus the manual time advanced so far.
    public func now() -> ContinuousClock.Instant { origin + elapsed }

    /// The manual time advanced since the scheduler was created.
    public var elapsed: Duration { .nanoseconds(Int64(clamping: ticks())) }

    /// Manual time in nanoseconds.
    private func ticks() -> UInt64 { clock.load(ordering: .relaxed) }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let (deadline, overflow) = ticks().addingReportingOverflow(delay.nanoseconds)
        let deadlineOrMax = overflow ? .max : deadline
        if DispatchQueue.getSpecific(key: onQueueKey) == true {
            return insert(deadline: deadlineOrMax, work)
        }
        return queue.sync { insert(deadline: deadlineOrMax, work) }
    }

    /// Work scheduled and neither run nor cancelled yet.
    public func pendingCount() async -> Int {
        await onQueue { self.confined.value.timers.filter { !$0.cancelled.load(ordering: .relaxed) }.count }
    }

    /// Moves the clock forward by `duration`, running every timer that falls due, one at a
    /// time on the queue and in deadline order; work that a timer (or anything it enqueued on
    /// the queue before) schedules within the window runs too. Call it from a test task.
    public func advance(by duration: Duration) async {
        let (target, overflow) = ticks().addingReportingOverflow(duration.nanoseconds)
        let end = overflow ? UInt64.max : target
        while await onQueue({ self.runNextDue(upTo: end) }) {}
        await onQueue { if self.clock.load(ordering: .relaxed) < end { self.clock.store(end, ordering: .relaxed) } }
    }

    private func insert(deadline: UInt64, _ work: @escaping @Sendable () -> Void) -> Entry {
        confined.value.lastSequence += 1
        let entry = Entry(deadline: deadline, sequence: confined.value.lastSequence, work: work)
        confined.value.timers.append(entry)
        return entry
    }

    /// On the queue: runs the earliest live timer due by `end`; false when there is none.
    private func runNextDue(upTo end: UInt64) -> Bool {
        confined.value.timers.removeAll { $0.cancelled.load(ordering: .relaxed) }
        guard let i = Self.earliest(in: confined.value.timers, dueBy: end) else { return false }
        let entry = confined.value.timers.remove(at: i)
        if clock.load(ordering: .relaxed) < entry.deadline { clock.store(entry.deadline, ordering: .relaxed) }
        entry.work()
        return true
    }

    /// The index of the timer due by `end` with the earliest deadline, then the earliest sequence.
    private static func earliest(in timers: [Entry], dueBy end: UInt64) -> Int? {
        var best: Int?
        for (i, t) in timers.enumerated() where t.deadline <= end {
            if let b = best, (timers[b].deadline, timers[b].sequence) <= (t.deadline, t.sequence) { continue }
            best = i
        }
        return best
    }

    /// Runs `body` on the queue, after everything already enqueued there.
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }
}
