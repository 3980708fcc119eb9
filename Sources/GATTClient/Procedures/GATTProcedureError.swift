import BLEWire
import ATT

/// Why a GATT procedure on a bearer failed: the ATT layer's error, or a response that breaks
/// the procedure (the Peripheral turns both into a `GATTError` naming the attribute and peer).
public enum GATTProcedureError: Error, Sendable, Equatable, CustomStringConvertible {
    case att(ATTError)
    /// The response is well-formed ATT but inconsistent with the procedure.
    case invalidResponse(String)
    /// The procedure did not end within `limit` (`GATTProcedures.procedureTimeout`), each of
    /// its requests answered in time or not: `progress` says how far it got.
    case procedureTimeout(GATTProcedureProgress, limit: Duration)

    public var description: String {
        switch self {
        case .att(let e): return "\(e)"
        case .invalidResponse(let why): return why
        case .procedureTimeout(let progress, let limit): return "\(progress.procedure) did not end within \(limit) (\(progress.details))"
        }
    }
}

extension GATTProcedureError: BLEError {
    public var isCancellation: Bool {
        if case .att(let error) = self { return error.isCancellation }
        return false
    }
}
