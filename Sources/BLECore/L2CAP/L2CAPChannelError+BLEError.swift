import BLEWire
extension L2CAPChannelError: BLEError {
    /// True for `.cancelled`, and for a link error that is itself a cancellation.
    public var isCancellation: Bool {
        switch self {
        case .cancelled: return true
        case .link(let error): return error.isCancellation
        default: return false
        }
    }
}
