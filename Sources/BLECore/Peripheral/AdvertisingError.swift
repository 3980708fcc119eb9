import BLEWire

/// Why an advertising set could not start or change. Texts say what to change.
///
///     do { _ = try await central.startAdvertising(data) } catch { print(error) } // advertising data is 40 octets: legacy advertising carries at most 31 ...
public enum AdvertisingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The advertising data (or scan response data, `scanResponse` true) is longer than the
    /// format and the controller allow.
    case dataTooLong(scanResponse: Bool, length: Int, maximum: Int, format: AdvertisingParameters.Format)
    /// A parameter is out of its range or does not fit the kind and format of the set.
    case invalidParameter(field: String, reason: String)
    /// The controller cannot do what the parameters ask (extended advertising, event limits).
    case unsupported(String)
    /// Every advertising set the controller supports is in use.
    case setLimitReached(sets: Int)
    /// A command of the set failed (the controller refused it, or the transport failed).
    case command(HCIError)
    /// The adapter is not powered on.
    case adapterNotReady(AdapterState)
    /// The set was stopped (or ended) already.
    case notAdvertising(handle: UInt8)
    /// The calling task was cancelled while the set was being started; nothing advertises.
    case cancelled

    public var description: String {
        switch self {
        case .dataTooLong(let scanResponse, let length, let maximum, let format):
            let what = scanResponse ? "scan response data" : "advertising data"
            let hint = format == .legacy
                ? "shorten it (a shortened name, fewer UUIDs), move part of it to the scan response, or use extended advertising"
                : "shorten it: this controller's maximum advertising data length is \(maximum) octets"
            return "\(what) is \(length) octets: \(format == .legacy ? "legacy" : "extended") advertising carries at most \(maximum); \(hint)"
        case .invalidParameter(let field, let reason):
            return "advertising parameter \(field): \(reason)"
        case .unsupported(let what):
            return what
        case .setLimitReached(let sets):
            return "the controller supports \(sets) advertising set\(sets == 1 ? "" : "s") and all are in use: stop one first"
        case .command(let error):
            return "advertising: \(error)"
        case .adapterNotReady(let state):
            return "the adapter is \(state), not powered on"
        case .notAdvertising(let handle):
            return "advertising set \(handle) has ended"
        case .cancelled:
            return "starting advertising was cancelled; what the start had enabled is disabled again"
        }
    }
}

extension AdvertisingError: BLEError {
    public var isCancellation: Bool {
        if case .command(let e) = self { return e.isCancellation }
        return self == .cancelled
    }
}
