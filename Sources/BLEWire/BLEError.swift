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

extension DecodeError: BLEError {
    public var isCancellation: Bool { false }
}
