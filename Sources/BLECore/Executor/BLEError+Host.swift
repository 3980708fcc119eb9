import BLEWire

// The errors of the host, its links, and scans answer `BLEError.isCancellation`.

extension HCIError: BLEError {
    public var isCancellation: Bool {
        switch self {
        case .cancelled, .cancelledAfterSending: return true
        default: return false
        }
    }
}

extension LinkError: BLEError {
    public var isCancellation: Bool {
        if case .cancelled = self { return true }
        return false
    }
}

extension ConnectionError: BLEError {
    public var isCancellation: Bool {
        switch self {
        case .cancelled: return true
        case .command(_, let error): return error.isCancellation
        default: return false
        }
    }
}

extension ScanError: BLEError {
    public var isCancellation: Bool { false }
}

extension L2CAPSocketError: BLEError {
    public var isCancellation: Bool {
        switch self {
        case .cancelled, .acceptCancelled: return true
        default: return false
        }
    }
}
