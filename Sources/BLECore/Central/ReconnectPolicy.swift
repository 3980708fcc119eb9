import BLEWire

/// What to do when a link drops unexpectedly. A disconnect the application asked for never
/// reconnects.
///
///     let link = try await central.connect(peer, reconnect: .always(maxAttempts: 5))
public enum ReconnectPolicy: Sendable {
    /// Never reconnect.
    case never
    /// Reconnect up to `maxAttempts` times (nil: forever), waiting `backoff.delay(attempt)` first.
    case always(maxAttempts: Int? = nil, backoff: Backoff = .exponential())
    /// The closure decides from the disconnect reason and the attempt number (from 1): the delay
    /// before the next attempt, or nil to give up.
    case custom(@Sendable (HCIStatus, Int) -> Duration?)

    /// Delays between attempts.
    public struct Backoff: Sendable, Hashable {
        public var initial: Duration
        public var multiplier: Double
        public var maximum: Duration
        /// Fraction of the delay added or removed at random (0.2 = ±20 %).
        public var jitter: Double

        public static func exponential(initial: Duration = .milliseconds(500), multiplier: Double = 2, maximum: Duration = .seconds(30), jitter: Double = 0.2) -> Backoff {
            Backoff(initial: initial, multiplier: multiplier, maximum: maximum, jitter: jitter)
        }

        /// The delay before attempt `attempt` (from 1).
        public func delay(attempt: Int, random: Double = Double.random(in: -1...1)) -> Duration {
            let base = Double(initial.nanoseconds) * pow(multiplier, Double(max(0, attempt - 1)))
            let capped = min(base, Double(maximum.nanoseconds))
            let jittered = capped * (1 + jitter * max(-1, min(1, random)))
            return .nanoseconds(Int64(max(0, jittered)))
        }

        private func pow(_ x: Double, _ n: Double) -> Double {
            var r = 1.0
            var i = 0.0
            while i < n && r < 1e12 { r *= x; i += 1 }
            return r
        }
    }

    /// The delay before reconnect attempt `attempt` after a drop for `reason`, or nil to stop.
    public func delay(reason: HCIStatus, attempt: Int) -> Duration? {
        switch self {
        case .never: return nil
        case .always(let max, let backoff):
            if let max, attempt > max { return nil }
            return backoff.delay(attempt: attempt)
        case .custom(let decide):
            return decide(reason, attempt)
        }
    }
}
