import BLECore
import BLEWire

extension PairingError: BLEError {
    /// The caller's cancellation, also when it reached pairing wrapped in a link error.
    public var isCancellation: Bool {
        switch kind {
        case .cancelled: return true
        case .link(let e): return e.isCancellation
        case .channelClosed(let e): return e.isCancellation
        default: return false
        }
    }
}

extension CryptoError: BLEError {
    public var isCancellation: Bool { false }
}

extension BondStoreError: BLEError {
    public var isCancellation: Bool { false }
}
