import BLEWire

/// Why connecting failed or a link operation could not complete. Texts name the peer.
public enum ConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection within the timeout; the attempt was cancelled.
    case timeout(peer: LEAddress, milliseconds: Int)
    /// The caller's task was cancelled: the call returned at once, and an attempt already
    /// sent is cancelled at the controller (LE Create Connection Cancel) without it.
    case cancelled(peer: LEAddress)
    /// The controller reported a failed connection (e.g. 0x3E Connection Failed to be Established).
    case failed(peer: LEAddress, status: HCIStatus)
    /// A command for the link failed.
    case command(peer: LEAddress, HCIError)
    /// The link is gone.
    case disconnected(peer: LEAddress, reason: HCIStatus)
    /// The adapter is not powered on.
    case adapterNotReady(AdapterState)
    /// `connect` was called for a peer that already has a connection, with other `options`
    /// than that connection's: use the connection you have, or `disconnect()` it first.
    case alreadyConnected(peer: LEAddress, differing: [ConnectOption])

    public var description: String {
        switch self {
        case .timeout(let peer, let ms):
            return "no connection to \(peer) within \(ms) ms: is it advertising connectably and in range?"
        case .cancelled(let peer):
            return "connecting to \(peer) was cancelled"
        case .failed(let peer, let status):
            var hint = ""
            if status == .connectionFailedToBeEstablished { hint = ": the peer did not answer after the connect request (out of range or busy?); try again" }
            if status == .commandDisallowed { hint = ": the controller refuses to initiate now (another attempt pending?)" }
            if status == .memoryCapacityExceeded { hint = ": the controller cannot hold another connection" }
            return "connecting to \(peer) failed: \(status)\(hint)"
        case .command(let peer, let error):
            return "\(peer): \(error)"
        case .disconnected(let peer, let reason):
            return "\(peer) disconnected: \(reason)"
        case .adapterNotReady(let state):
            return "the adapter is \(state), not powered on"
        case .alreadyConnected(let peer, let differing):
            let names = differing.map(\.rawValue).joined(separator: ", ")
            return "\(peer) already has a connection, made with another \(names): use that connection, or disconnect() it first and connect again with the new options"
        }
    }
}
