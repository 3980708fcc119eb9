/// The adapter's state as the application sees it.
///
///     for await state in await central.stateEvents() where state == .poweredOn { break }
public enum AdapterState: Sendable, Hashable, CustomStringConvertible {
    /// Not opened yet.
    case unknown
    /// Being reset and initialised.
    case resetting
    /// Ready: scanning and connecting work.
    case poweredOn
    /// Closed by the application.
    case poweredOff
    /// The adapter could not be opened for lack of permission.
    case unauthorized
    /// The controller does not support LE.
    case unsupported
    /// The transport to the controller was lost, or the controller reported a hardware error.
    case transportLost

    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .resetting: return "resetting"
        case .poweredOn: return "powered on"
        case .poweredOff: return "powered off"
        case .unauthorized: return "unauthorized"
        case .unsupported: return "unsupported"
        case .transportLost: return "transport lost"
        }
    }
}

/// A snapshot of the adapter for UI code.
public struct AdapterSnapshot: Sendable, Hashable {
    public var state: AdapterState
    public var isScanning: Bool
    public var connectionCount: Int
    /// Why the adapter is not powered on, when it is not.
    public var reason: String?

    public var isPowered: Bool { state == .poweredOn }
    public var isAuthorized: Bool { state != .unauthorized }
}
