import Dispatch

/// A timer that can be cancelled before it fires.
public protocol ScheduledTimer: Sendable {
    func cancel()
}

/// Where the stack's timeouts come from. Production uses `DispatchTimerScheduler` on the
/// adapter queue; tests use a manual clock so time can be advanced without sleeping.
///
///     let timer = scheduler.schedule(after: .seconds(2)) { /* runs on the adapter queue */ }
public protocol TimerScheduler: Sendable {
    /// The current instant of this scheduler's clock (a manual clock in tests).
    func now() -> ContinuousClock.Instant
    /// Runs `work` on the adapter queue once `delay` has passed, unless cancelled first.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer
}

extension Duration {
    /// Whole nanoseconds, saturating.
    public var nanoseconds: UInt64 {
        let (s, atto) = components
        if s < 0 { return 0 }
        let (ns, overflow) = UInt64(s).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : ns &+ UInt64(atto / 1_000_000_000)
    }
}

/// Timers on a dispatch queue (the adapter's).
///
/// Each timer is a one-shot dispatch timer source, not `asyncAfter` with a work item: a
/// cancelled work item stays queued with its closure until its deadline, so thousands of
/// cancelled 30 s ATT timeouts per second (link churn) would hold memory for 30 s. A
/// cancelled source releases its handler at once.
public struct DispatchTimerScheduler: TimerScheduler {
    public let queue: DispatchQueue
    public init(queue: DispatchQueue) { self.queue = queue }

    public func now() -> ContinuousClock.Instant { .now }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let source = DispatchSource.makeTimerSource(queue: queue)
        let ns = min(delay.nanoseconds, UInt64(Int.max))
        source.schedule(deadline: .now() + .nanoseconds(Int(ns)), leeway: .nanoseconds(0))
        // The handler keeps the source alive until it fires or is cancelled; cancelling
        // releases the handler and with it that reference.
        source.setEventHandler {
            source.cancel()
            work()
        }
        source.resume()
        return DispatchTimer(source: source)
    }

    struct DispatchTimer: ScheduledTimer, @unchecked Sendable { // DispatchSource.cancel() is thread-safe; the source is never mutated otherwise
        let source: any DispatchSourceTimer
        func cancel() { source.cancel() }
    }
}
