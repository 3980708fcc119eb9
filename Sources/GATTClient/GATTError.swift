/// Why a GATT operation failed. The text says what was attempted, on which attribute and
/// which peer, and what went wrong:
/// "Insufficient Authentication (0x05) reading Heart Rate Measurement (2A37) on F0:F1:F2:F3:F4:F5".
///
///     do { _ = try await peripheral.read(measurement) }
///     catch let error as GATTError where error.attErrorCode == .insufficientAuthentication { ... }
public enum GATTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer answered with an Error Response (Vol 3, Part F, 3.4.1.1) while `operation`
    /// ("reading", "writing", "discovering characteristics of") ran on `target`.
    case attribute(ATTErrorCode, operation: String, target: String, peer: String)
    /// The service is not on the peer; `available` lists the services it has.
    case serviceNotFound(BluetoothUUID, peer: String, available: [BluetoothUUID])
    /// The characteristic is not in the service; `available` lists the ones it has.
    case characteristicNotFound(BluetoothUUID, service: BluetoothUUID, peer: String, available: [BluetoothUUID])
    /// The descriptor is not on the characteristic.
    case descriptorNotFound(BluetoothUUID, characteristic: BluetoothUUID, peer: String, available: [BluetoothUUID])
    /// The characteristic's properties do not allow `operation` (e.g. notify on a read-only one).
    case notSupported(operation: String, target: String, properties: GATTCharacteristicProperties, peer: String)
    /// The link went away.
    case disconnected(peer: String, reason: String)
    /// The peer did not answer within the ATT transaction timeout (Vol 3, Part F, 3.3.3).
    case timeout(operation: String, target: String, peer: String)
    /// A procedure of several requests (discovery, a long read or write) did not end within
    /// `limit` (`Peripheral`'s `procedureTimeout`): the peer answered, but too slowly.
    /// `progress` says how far it got.
    case procedureTimeout(GATTProcedureProgress, limit: Duration, peer: BluetoothAddress)
    /// The peer's answer broke the protocol: malformed, or inconsistent with the request
    /// (handles not increasing during discovery, a Prepare Write echo that differs...).
    case malformed(operation: String, target: String, peer: String, detail: String)
    /// A value could not be decoded into the requested type.
    case invalidValue(GATTValueError, target: String, peer: String)
    /// The value is too long for the procedure (e.g. a Write Command beyond ATT_MTU - 3).
    case valueTooLong(length: Int, maximum: Int, operation: String, target: String)
    /// The string given for a UUID does not parse.
    case invalidUUID(String)
    /// The caller's task was cancelled.
    case cancelled(operation: String, target: String)
    /// Connecting failed.
    case connection(ConnectionError)
    /// A Service Changed indication covered the subscribed characteristic: its handles may
    /// have moved, so the stream ended.
    case serviceChanged(range: ATTHandleRange, peer: String)
    /// The peer refused a request for lack of security (`attribute` holds its answer), and
    /// raising the link's security (`Peripheral.setSecurityRaiser`) failed (`reason`).
    case securityNeeded(attribute: ATTErrorCode, needed: SecurityLevel, peer: String, reason: String)

    /// The ATT error code, when the peer answered with an Error Response.
    public var attErrorCode: ATTErrorCode? {
        if case .attribute(let code, _, _, _) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .attribute(let code, let op, let target, let peer):
            let hint = code.hint.map { "; \($0)" } ?? ""
            return "\(code) \(op) \(target) on \(peer)\(hint)"
        case .serviceNotFound(let uuid, let peer, let available):
            return "service \(uuid) not found on \(peer); it has \(list(available))"
        case .characteristicNotFound(let uuid, let service, let peer, let available):
            return "characteristic \(uuid) not found in service \(service) on \(peer); it has \(list(available))"
        case .descriptorNotFound(let uuid, let characteristic, let peer, let available):
            return "descriptor \(uuid) not found on characteristic \(characteristic) on \(peer); it has \(list(available))"
        case .notSupported(let op, let target, let properties, let peer):
            return "\(target) on \(peer) does not support \(op) (properties: \(properties))"
        case .disconnected(let peer, let reason):
            return "\(peer) disconnected: \(reason)"
        case .timeout(let op, let target, let peer):
            return "no response from \(peer) within the ATT transaction timeout \(op) \(target); the link must be reconnected"
        case .procedureTimeout(let progress, let limit, let peer):
            return "\(progress.procedure) on \(peer) did not end within its limit of \(limit) (\(progress)); the peer answers too slowly: retry later, or give the Peripheral a longer procedureTimeout if this peer is known to be slow"
        case .malformed(let op, let target, let peer, let detail):
            return "\(peer) answered with a malformed or inconsistent response \(op) \(target): \(detail)"
        case .invalidValue(let error, let target, let peer):
            return "the value of \(target) on \(peer) does not decode: \(error)"
        case .valueTooLong(let length, let maximum, let op, let target):
            return "\(length)-byte value is too long \(op) \(target) (at most \(maximum)); use a long write"
        case .invalidUUID(let s):
            return "\"\(s)\" is not a Bluetooth UUID: use 4 or 8 hex digits or the 36-character form"
        case .cancelled(let op, let target):
            return "\(op) \(target) was cancelled"
        case .connection(let error):
            return "\(error)"
        case .serviceChanged(let range, let peer):
            return "the attributes \(range) of \(peer) changed (Service Changed); discover and subscribe again"
        case .securityNeeded(let code, let needed, let peer, let reason):
            return "\(peer) answered \(code): the link must be \(needed), and raising it failed: \(reason)"
        }
    }

    private func list(_ uuids: [BluetoothUUID]) -> String {
        uuids.isEmpty ? "none" : uuids.map(\.description).joined(separator: ", ")
    }
}

extension GATTError: BLEError {
    /// The caller's cancellation, also when it reached this layer wrapped in a connection error.
    public var isCancellation: Bool {
        switch self {
        case .cancelled: return true
        case .connection(let error): return error.isCancellation
        default: return false
        }
    }
}
