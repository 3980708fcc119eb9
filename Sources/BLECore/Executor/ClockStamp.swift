/// A `ContinuousClock.Instant` kept as its distance from one fixed instant of the process.
/// `ContinuousClock.Instant` is not frozen, so a structure holding it has no fixed layout
/// outside the standard library and every copy goes through runtime metadata; `Duration` is
/// frozen. For instants stored per packet or per report (a queued fragment's deadline).
///
///     let deadline = ClockStamp(scheduler.now() + timeout)
///     if deadline <= ClockStamp(scheduler.now()) { expire() }
struct ClockStamp: Comparable, Sendable {
    /// The fixed instant; any instant works, virtual clocks included (the distance may be negative).
    private static let origin = ContinuousClock.now
    private let sinceOrigin: Duration

    init(_ instant: ContinuousClock.Instant) { sinceOrigin = instant - Self.origin }

    var instant: ContinuousClock.Instant { Self.origin + sinceOrigin }

    static func < (a: ClockStamp, b: ClockStamp) -> Bool { a.sinceOrigin < b.sinceOrigin }
}
