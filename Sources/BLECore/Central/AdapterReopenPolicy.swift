import BLEWire

/// How `Central.reopen` opens an adapter again after it went away (a USB dongle unplugged,
/// the kernel's virtual adapter removed, an H4 link dropped): attempts spaced by `backoff`,
/// at most `maxAttempts` of them, and an attempt at once whenever `appearances` reports the
/// adapter back.
///
///     let info = try await central.reopen(AdapterReopenPolicy(backoff: .exponential(initial: .milliseconds(250), maximum: .seconds(5))))
public struct AdapterReopenPolicy: Sendable {
    /// The delays between attempts; they start again from `initial` when the adapter appears.
    public var backoff: ReconnectPolicy.Backoff
    /// Attempts before `reopen` gives up and throws the last attempt's error (nil: until it
    /// succeeds or its task is cancelled).
    public var maxAttempts: Int?
    /// Tells of the adapter coming back, given the central's transport name; nil, or a nil
    /// stream, for the backoff alone. The default, `kernelAppearances`, watches the kernel's
    /// HCI monitor channel for a new adapter of the same index (hci specs only).
    public var appearances: (@Sendable (_ transport: String) -> AsyncStream<Void>?)?

    public init(backoff: ReconnectPolicy.Backoff = .exponential(initial: .milliseconds(250), maximum: .seconds(10)),
                maxAttempts: Int? = nil,
                appearances: (@Sendable (_ transport: String) -> AsyncStream<Void>?)? = AdapterReopenPolicy.kernelAppearances) {
        self.backoff = backoff
        self.maxAttempts = maxAttempts
        self.appearances = appearances
    }
}

/// What `Central.reopen` does, in order, for logs and UI ("adapter gone, next try in 2 s").
///
///     for await event in await central.reopenEvents() { print(event) }
public enum AdapterReopenEvent: Sendable, CustomStringConvertible {
    /// Attempt `attempt` (from 1) failed with `error`; the next one follows after `retryIn`,
    /// or at once when the adapter appears sooner.
    case attemptFailed(attempt: Int, error: any Error & Sendable, retryIn: Duration)
    /// The adapter came back (see `AdapterReopenPolicy.appearances`): the next attempt starts
    /// now and the backoff starts over.
    case adapterAppeared
    /// Attempt `attempt` opened the adapter and powered it on.
    case reopened(attempt: Int)

    public var description: String {
        switch self {
        case .attemptFailed(let attempt, let error, let delay):
            return "reopen attempt \(attempt) failed: \(error); next attempt in \(delay.millisecondsDescription)"
        case .adapterAppeared: return "the adapter appeared; reopening now"
        case .reopened(let attempt): return "reopened on attempt \(attempt)"
        }
    }
}

/// Why `Central.reopen` cannot start.
public enum AdapterReopenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The central runs over a transport it was handed already open, which it cannot open again.
    case notReopenable(transport: String)
    /// The central was closed.
    case closed(transport: String)

    public var description: String {
        switch self {
        case .notReopenable(let name):
            return "cannot reopen \(name): the central was given an open transport; open it by its spec with Central.open(_:) (or Central(device:)) to reopen it"
        case .closed(let name):
            return "cannot reopen \(name): the central is closed; create a new one"
        }
    }
}

extension AdapterReopenError: BLEError {
    public var isCancellation: Bool { false }
}
