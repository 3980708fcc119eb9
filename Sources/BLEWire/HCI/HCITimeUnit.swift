/// The time units HCI and the Link Layer carry parameters in, and their conversion to
/// `Duration`: the public API speaks `Duration`, the codec speaks units.
package enum HCITimeUnit: Int64, Sendable {
    /// 0.625 ms: scan interval and window (Vol 4, Part E, 7.8.10), advertising intervals (7.8.5).
    case slot = 625
    /// 1.25 ms: connection intervals (Vol 4, Part E, 7.8.12; Vol 6, Part B, 4.5.1).
    case connectionInterval = 1_250
    /// 10 ms: supervision timeout (Vol 4, Part E, 7.8.12).
    case supervisionTimeout = 10_000

    /// `units` of this unit as a duration.
    package func duration<T: BinaryInteger>(_ units: T) -> Duration {
        .microseconds(Int64(units) * rawValue)
    }

    /// `duration` in this unit, rounded to the nearest and clamped to `range`.
    package func units(_ duration: Duration, in range: ClosedRange<UInt16> = 0...0xFFFF) -> UInt16 {
        let exact = (duration / .microseconds(rawValue)).rounded()
        guard exact.isFinite, exact > Double(range.lowerBound) else { return range.lowerBound }
        return exact < Double(range.upperBound) ? UInt16(exact) : range.upperBound
    }
}

extension Duration {
    /// "7.5 ms", "30 ms", "5000 ms": milliseconds with the fraction only when there is one.
    package var millisecondsDescription: String {
        let ms = self / .milliseconds(1)
        return ms == ms.rounded() ? "\(Int64(ms)) ms" : "\(ms) ms"
    }
}
