/// How many values a subscriber's stream keeps while its consumer is behind: the one policy
/// type of every stream of the stack (scan events, adapter state, connection events,
/// notifications and indications).
///
///     let values = try await peripheral.subscribe(to: measurement, bufferingPolicy: .bufferingNewest(64))
public enum StreamBufferingPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Keeps every value.
    case unbounded
    /// Keeps the newest `n` values, dropping older ones.
    case bufferingNewest(Int)
    /// Keeps the oldest `n` values, dropping newer ones.
    case bufferingOldest(Int)

    public var description: String {
        switch self {
        case .unbounded: return "unbounded"
        case .bufferingNewest(let n): return "bufferingNewest(\(n))"
        case .bufferingOldest(let n): return "bufferingOldest(\(n))"
        }
    }

    /// The same policy for an `AsyncStream`.
    func plain<Element>(_: Element.Type = Element.self) -> AsyncStream<Element>.Continuation.BufferingPolicy {
        switch self {
        case .unbounded: return .unbounded
        case .bufferingNewest(let n): return .bufferingNewest(max(0, n))
        case .bufferingOldest(let n): return .bufferingOldest(max(0, n))
        }
    }

    /// The same policy for an `AsyncThrowingStream`.
    func throwing<Element>(_: Element.Type = Element.self) -> AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy {
        switch self {
        case .unbounded: return .unbounded
        case .bufferingNewest(let n): return .bufferingNewest(max(0, n))
        case .bufferingOldest(let n): return .bufferingOldest(max(0, n))
        }
    }
}
