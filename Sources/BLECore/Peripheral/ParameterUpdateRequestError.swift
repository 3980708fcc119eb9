import BLEWire

/// Why an L2CAP Connection Parameter Update Request of the peripheral did not get the new
/// parameters accepted (Vol 3, Part A, 4.20 and 4.21).
///
///     do { try await link.requestParameterUpdate(range) } catch { print(error) } // the central rejected ...
public enum ParameterUpdateRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The central answered Result 0x0001 (rejected), or rejected the command itself.
    case rejected(peer: BluetoothAddress)
    /// No response within the timeout.
    case timeout(peer: BluetoothAddress, milliseconds: Int)
    /// Only the peripheral of a link sends the request; a central updates with LE Connection Update.
    case notPeripheral(peer: BluetoothAddress)
    /// The values break the ranges of Vol 3, Part A, 4.20.
    case invalidParameters(ConnectionParameterRange)
    /// The link ended (or was not up) before the response.
    case link(LinkError)
    /// The calling task was cancelled; a late response is ignored.
    case cancelled(peer: BluetoothAddress)

    public var description: String {
        switch self {
        case .rejected(let peer):
            return "\(peer) rejected the connection parameter update request: ask for a wider interval range, or keep the parameters"
        case .timeout(let peer, let ms):
            return "\(peer) did not answer the connection parameter update request within \(ms) ms"
        case .notPeripheral(let peer):
            return "the link to \(peer) is central-role: use updateParameters(_:) (LE Connection Update) instead"
        case .invalidParameters(let r):
            return "interval \(r.minimumInterval)-\(r.maximumInterval), latency \(r.peripheralLatency), timeout \(r.supervisionTimeout) are outside the ranges of Vol 3, Part A, 4.20"
        case .link(let error):
            return "connection parameter update request: \(error)"
        case .cancelled(let peer):
            return "the connection parameter update request to \(peer) was cancelled"
        }
    }
}

extension ParameterUpdateRequestError: BLEError {
    public var isCancellation: Bool {
        if case .cancelled = self { return true }
        return false
    }
}
