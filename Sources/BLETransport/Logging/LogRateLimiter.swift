import BLEWire

/// Lets one log line of each kind through per interval and counts the ones held back; the
/// next line that passes says how many were suppressed. A peer that sends a thousand
/// malformed packets a second costs one line per interval, not a thousand.
///
///     var limiter = LogRateLimiter<String>(interval: .seconds(10))
///     if let suppressed = limiter.admit("malformed", now: scheduler.now()) {
///         logger.log(.warning, LogRateLimiter<String>.line("malformed signaling command", suppressed: suppressed, interval: limiter.interval))
///     }
public struct LogRateLimiter<Kind: Hashable>: Sendable where Kind: Sendable {
    public let interval: Duration
    private var windows: [Kind: (start: ContinuousClock.Instant, suppressed: Int)] = [:]

    public init(interval: Duration) { self.interval = interval }

    /// Nil when a line of `kind` was already written in the current interval (it is counted);
    /// otherwise the number of lines of that kind suppressed since the last one written.
    public mutating func admit(_ kind: Kind, now: ContinuousClock.Instant) -> Int? {
        if let window = windows[kind], now - window.start < interval {
            windows[kind]?.suppressed += 1
            return nil
        }
        let suppressed = windows[kind]?.suppressed ?? 0
        windows[kind] = (now, 0)
        return suppressed
    }

    /// How many lines of `kind` are held back in the current interval.
    public func suppressed(_ kind: Kind) -> Int { windows[kind]?.suppressed ?? 0 }

    /// `message`, followed by the count of suppressed similar lines when there were any.
    public static func line(_ message: String, suppressed: Int, interval: Duration) -> String {
        guard suppressed > 0 else { return message }
        return "\(message) (\(suppressed) similar line\(suppressed == 1 ? "" : "s") suppressed, at most one per \(interval.components.seconds) s)"
    }
}
