import BLEWire

/// Where a link is in its life, as `Connection.linkStates()` reports it. The connection owns
/// the one state machine (`Connection+Lifecycle.swift`):
///
///     connect() ──▶ connecting(1) ──▶ connected ──disconnect()──▶ disconnecting ──▶ closed
///                                       │   ▲
///                              drop,    │   │ LE Connection Complete
///                              policy   ▼   │
///                                   reconnecting ──attempt──▶ connecting ──fails──▶ reconnecting / closed
///
/// `linkStates()` starts with the first attempt: a connection exists once that attempt
/// succeeded, so its story always begins `connecting(attempt: 1)`, `connected`.
/// A drop without a reconnect policy (or one that gives up) goes to `closed`. A Hardware
/// Error or a controller reset drops every link; a link with a policy then waits in
/// `reconnecting` until the adapter is powered on again.
///
///     for await state in await link.linkStates() { if case .closed(let why) = state { print(why) } }
public enum LinkState: Sendable, Hashable, CustomStringConvertible {
    /// Attempt `attempt` to create the link is pending at the controller (1 is the first connect).
    case connecting(attempt: Int)
    case connected(handle: UInt16)
    /// Down; reconnect attempt `attempt` follows after the policy's delay (or once the
    /// adapter is powered on again after a reset).
    case reconnecting(attempt: Int)
    /// `disconnect()` sent HCI Disconnect; Disconnection Complete ends the link.
    case disconnecting(handle: UInt16)
    /// Ended for good: nothing restores the link.
    case closed(LinkClosure)

    public var description: String {
        switch self {
        case .connecting(let n): return "connecting (attempt \(n))"
        case .connected(let h): return "connected (handle \(h.hex))"
        case .reconnecting(let n): return "reconnecting (attempt \(n) next)"
        case .disconnecting(let h): return "disconnecting (handle \(h.hex))"
        case .closed(let why): return "closed: \(why)"
        }
    }
}

/// Why a link ended for good.
public enum LinkClosure: Sendable, Hashable, CustomStringConvertible {
    /// The link dropped (or was disconnected) with HCI reason `reason`, and no restore follows.
    case disconnected(reason: HCIStatus)
    /// The restore of the link stopped after `attempts` attempts (0: before any): the policy
    /// gave up, `disconnect()` was called, or the adapter went away.
    case restoreEnded(attempts: Int, lastError: String)
    /// The transport to the controller is gone, and the link with it.
    case transportLost(String)

    public var description: String {
        switch self {
        case .disconnected(let reason): return "\(reason)"
        case .restoreEnded(0, let why): return why
        case .restoreEnded(let n, let why): return "gave up reconnecting after \(n) attempt\(n == 1 ? "" : "s"): \(why)"
        case .transportLost(let why): return "link lost with the transport: \(why)"
        }
    }
}
