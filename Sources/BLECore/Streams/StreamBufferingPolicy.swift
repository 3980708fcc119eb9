import BLEWire

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
    /// Keeps up to `n` values; a value that finds `n` queued ends the stream, after the queued
    /// ones, with `StreamError.consumerTooSlow` (a stream that cannot throw just ends).
    case endingWhenFull(Int)

    public var description: String {
        switch self {
        case .unbounded: return "unbounded"
        case .bufferingNewest(let n): return "bufferingNewest(\(n))"
        case .bufferingOldest(let n): return "bufferingOldest(\(n))"
        case .endingWhenFull(let n): return "endingWhenFull(\(n))"
        }
    }

    /// The most values queued at once; nil when unbounded.
    public var limit: Int? {
        switch self {
        case .unbounded: return nil
        case .bufferingNewest(let n), .bufferingOldest(let n), .endingWhenFull(let n): return max(0, n)
        }
    }

    /// The same policy for an `AsyncStream` (`endingWhenFull` keeps the oldest; the caller
    /// ends the stream when a value is dropped).
    func plain<Element>(_: Element.Type = Element.self) -> AsyncStream<Element>.Continuation.BufferingPolicy {
        switch self {
        case .unbounded: return .unbounded
        case .bufferingNewest(let n): return .bufferingNewest(max(0, n))
        case .bufferingOldest(let n), .endingWhenFull(let n): return .bufferingOldest(max(0, n))
        }
    }

    /// The same policy for an `AsyncThrowingStream` (as `plain`).
    func throwing<Element>(_: Element.Type = Element.self) -> AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy {
        switch self {
        case .unbounded: return .unbounded
        case .bufferingNewest(let n): return .bufferingNewest(max(0, n))
        case .bufferingOldest(let n), .endingWhenFull(let n): return .bufferingOldest(max(0, n))
        }
    }
}

/// Why a stream ended on its own.
public enum StreamError: BLEError, Sendable, Equatable, CustomStringConvertible {
    /// The subscriber's buffer held `limit` values when one more arrived, under the
    /// `endingWhenFull` policy: the consumer iterates slower than values arrive.
    case consumerTooSlow(stream: String, limit: Int)

    public var isCancellation: Bool { false }

    public var description: String {
        switch self {
        case .consumerTooSlow(let stream, let limit):
            return "\(stream): the consumer fell \(limit) value\(limit == 1 ? "" : "s") behind and the stream ended (policy endingWhenFull(\(limit))); iterate faster, allow more values, or choose bufferingNewest to drop the oldest instead"
        }
    }
}
