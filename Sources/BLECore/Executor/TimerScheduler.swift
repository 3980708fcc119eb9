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
    /// Monotonic time in nanoseconds.
    func now() -> UInt64
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
public struct DispatchTimerScheduler: TimerScheduler {
    public let queue: DispatchQueue
    public init(queue: DispatchQueue) { self.queue = queue }

    public func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let item = DispatchWorkItem(block: work)
        let ns = min(delay.nanoseconds, UInt64(Int.max))
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(ns)), execute: item)
        return DispatchTimer(item: item)
    }

    struct DispatchTimer: ScheduledTimer, @unchecked Sendable { // DispatchWorkItem.cancel() is thread-safe; the item is never mutated otherwise
        let item: DispatchWorkItem
        func cancel() { item.cancel() }
    }
}
