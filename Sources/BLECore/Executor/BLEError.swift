/// What every error type of the stack has in common besides its text (which says what
/// happened and what to do): whether it only means that the caller's task was cancelled. Code that treats
/// cancellation apart (a CLI that exits quietly on Ctrl-C, a retry loop) tests one property
/// for any layer's error, including errors that wrap another layer's.
///
///     catch let error as any BLEError where error.isCancellation { return }   // stopped, not failed
///
/// `CancellationError` conforms too, so one test covers the standard library's cancellation.
public protocol BLEError: Error {
    /// True when the operation stopped because the calling task was cancelled, not because
    /// something failed.
    var isCancellation: Bool { get }
}

extension CancellationError: BLEError {
    public var isCancellation: Bool { true }
}

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

extension TransportError: BLEError {
    public var isCancellation: Bool { false }
}

extension DecodeError: BLEError {
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
