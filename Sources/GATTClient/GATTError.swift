import BLEWire
import BLECore
import ATT

/// Why a GATT operation failed. The text says what was attempted, on which attribute and
/// which peer, what went wrong and what to do:
/// "Insufficient Authentication (0x05) reading Heart Rate Measurement (2A37) at handle 0x0012 on F0:F1:F2:F3:F4:F5; pair ...".
/// The fields are typed: the peer's address, the operation, the attribute's UUID and handle.
///
///     do { _ = try await peripheral.read(measurement) }
///     catch let error as GATTError where error.attErrorCode == .insufficientAuthentication { ... }
public enum GATTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer answered with an Error Response (Vol 3, Part F, 3.4.1.1) while `operation`
    /// ran on `target`.
    case attribute(ATTErrorCode, operation: GATTOperation, target: GATTTarget, peer: BluetoothAddress)
    /// The service is not on the peer; `available` lists the services it has.
    case serviceNotFound(BluetoothUUID, peer: BluetoothAddress, available: [BluetoothUUID])
    /// The characteristic is not in the service; `available` lists the ones it has.
    case characteristicNotFound(BluetoothUUID, service: BluetoothUUID, peer: BluetoothAddress, available: [BluetoothUUID])
    /// The descriptor is not on the characteristic.
    case descriptorNotFound(BluetoothUUID, characteristic: BluetoothUUID, peer: BluetoothAddress, available: [BluetoothUUID])
    /// The characteristic's properties do not allow `operation` (e.g. notifications of a
    /// read-only one).
    case notSupported(operation: GATTOperation, target: GATTTarget, properties: GATTCharacteristicProperties, peer: BluetoothAddress)
    /// The link went away; `reason` says how (the controller's reason, or what ended it).
    case disconnected(peer: BluetoothAddress, reason: String)
    /// The peer did not answer within the ATT transaction timeout (Vol 3, Part F, 3.3.3).
    case timeout(operation: GATTOperation, target: GATTTarget, peer: BluetoothAddress)
    /// A procedure of several requests (discovery, a long read or write) did not end within
    /// `limit` (`Peripheral`'s `procedureTimeout`): the peer answered, but too slowly.
    /// `progress` says how far it got.
    case procedureTimeout(GATTProcedureProgress, limit: Duration, peer: BluetoothAddress)
    /// The peer's answer broke the protocol: malformed, or inconsistent with the request
    /// (handles not increasing during discovery, a Prepare Write echo that differs...).
    case malformed(operation: GATTOperation, target: GATTTarget, peer: BluetoothAddress, detail: String)
    /// A value could not be decoded into the requested type.
    case invalidValue(GATTValueError, target: GATTTarget, peer: BluetoothAddress)
    /// The value is too long for the procedure (e.g. a Write Command beyond ATT_MTU - 3).
    case valueTooLong(length: Int, maximum: Int, operation: GATTOperation, target: GATTTarget)
    /// The string given for a UUID does not parse.
    case invalidUUID(String)
    /// The caller's task was cancelled.
    case cancelled(operation: GATTOperation, target: GATTTarget)
    /// Connecting failed.
    case connection(ConnectionError)
    /// A Service Changed indication covered the subscribed characteristic: its handles may
    /// have moved, so the stream ended.
    case serviceChanged(range: ATTHandleRange, peer: BluetoothAddress)
    /// The peer refused `operation` on `target` for lack of security (`attribute` holds its
    /// answer), and raising the link's security to `needed` (`Peripheral.setSecurityRaiser`)
    /// did not get it through (`reason`: the raise failed, or the peer refused again).
    case securityNeeded(attribute: ATTErrorCode, needed: SecurityLevel, operation: GATTOperation, target: GATTTarget,
                        peer: BluetoothAddress, reason: SecurityRaiseFailure)
    /// A signed write could not be signed: no signer (`Peripheral.setWriteSigner`), or the
    /// signer failed (`reason`).
    case signingFailed(target: GATTTarget, peer: BluetoothAddress, reason: String)
    /// An enhanced ATT bearer (an L2CAP channel on PSM 0x0027) failed: opening failed other
    /// than by the peer not serving EATT (that leaves the unenhanced bearer), or the peer
    /// closed the bearer a call was running on (`.closedByPeer`) while the link stayed up.
    case enhancedBearers(L2CAPChannelError, peer: BluetoothAddress)

    /// The ATT error code, when the peer answered with an Error Response.
    public var attErrorCode: ATTErrorCode? {
        switch self {
        case .attribute(let code, _, _, _), .securityNeeded(let code, _, _, _, _, _): return code
        default: return nil
        }
    }

    /// The peer the error concerns, when it names one.
    public var peer: BluetoothAddress? {
        switch self {
        case .attribute(_, _, _, let p), .serviceNotFound(_, let p, _), .characteristicNotFound(_, _, let p, _),
             .descriptorNotFound(_, _, let p, _), .notSupported(_, _, _, let p), .disconnected(let p, _), .timeout(_, _, let p),
             .procedureTimeout(_, _, let p), .malformed(_, _, let p, _), .invalidValue(_, _, let p), .serviceChanged(_, let p),
             .securityNeeded(_, _, _, _, let p, _), .signingFailed(_, let p, _), .enhancedBearers(_, let p):
            return p
        case .connection, .valueTooLong, .invalidUUID, .cancelled:
            return nil
        }
    }

    /// The attribute the error concerns, when it names one.
    public var target: GATTTarget? {
        switch self {
        case .attribute(_, _, let t, _), .notSupported(_, let t, _, _), .timeout(_, let t, _), .malformed(_, let t, _, _),
             .invalidValue(_, let t, _), .valueTooLong(_, _, _, let t), .cancelled(_, let t), .signingFailed(let t, _, _),
             .securityNeeded(_, _, _, let t, _, _):
            return t
        default:
            return nil
        }
    }

    /// What was attempted, when the error says.
    public var operation: GATTOperation? {
        switch self {
        case .attribute(_, let o, _, _), .notSupported(let o, _, _, _), .timeout(let o, _, _), .malformed(let o, _, _, _),
             .valueTooLong(_, _, let o, _), .cancelled(let o, _), .securityNeeded(_, _, let o, _, _, _):
            return o
        default:
            return nil
        }
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
            return "\(target) on \(peer) does not support \(op) (properties: \(properties)); use an operation its properties list"
        case .disconnected(let peer, let reason):
            return "\(peer) disconnected: \(reason); connect again to go on"
        case .timeout(let op, let target, let peer):
            return "no response from \(peer) within the ATT transaction timeout \(op) \(target); the link must be reconnected"
        case .procedureTimeout(let progress, let limit, let peer):
            return "\(progress.procedure) on \(peer) did not end within its limit of \(limit) (\(progress.details)); the peer answers too slowly: retry later, or give the Peripheral a longer procedureTimeout if this peer is known to be slow"
        case .malformed(let op, let target, let peer, let detail):
            return "\(peer) answered with a malformed or inconsistent response \(op) \(target): \(detail); retry, and report it to the peer's maker if it persists"
        case .invalidValue(let error, let target, let peer):
            return "the value of \(target) on \(peer) does not decode: \(error); check the type it is read as"
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
        case .securityNeeded(let code, let needed, let op, let target, let peer, .failed(let why)):
            return "\(code) \(op) \(target) on \(peer): pairing is needed (the link must be \(needed)), and raising the link's security failed: \(why)"
        case .securityNeeded(let code, _, let op, let target, let peer, .keySizeRefused(let size?)) where size >= 16:
            return "\(code) \(op) \(target) on \(peer) with a 16-octet key, the longest there is: no pairing can satisfy the peer; the peer's attribute permissions are wrong, report it to the device's maker"
        case .securityNeeded(let code, _, let op, let target, let peer, .keySizeRefused(let size)):
            return "\(code) \(op) \(target) on \(peer) again after pairing for a 16-octet key (the link's key: \(size.map { "\($0) octets" } ?? "size unknown")): the peer cannot give a longer key; nothing on this side can fix it"
        case .securityNeeded(let code, let needed, let op, let target, let peer, .refusedAgain(let reached)):
            return "\(code) \(op) \(target) on \(peer) again after the link became \(reached): the peer needs more (\(needed)); pair with MITM protection (PairingOptions.mitm) or Secure Connections Only, then retry"
        case .signingFailed(let target, let peer, let reason):
            return "a signed write to \(target) on \(peer) could not be signed: \(reason)"
        case .enhancedBearers(let error, let peer):
            return "enhanced ATT bearer (PSM 0x0027) to \(peer): \(error); later calls go on over the other bearers, or the unenhanced one"
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

/// Why raising a link's security did not get a refused request through
/// (`GATTError.securityNeeded`).
public enum SecurityRaiseFailure: Sendable, Hashable, CustomStringConvertible {
    /// Encrypting or pairing failed; the text of that error (it names the SMP reason).
    case failed(String)
    /// The link's security was raised to `reached`, the request ran again and the peer
    /// refused it again; it is not retried a second time.
    case refusedAgain(reached: SecurityLevel)
    /// Encryption Key Size Too Short (0x0C) with a key of `keySize` octets (nil: the
    /// controller did not say) that no pairing can lengthen: 16 octets, or a second refusal
    /// after pairing for 16.
    case keySizeRefused(keySize: Int?)

    public var description: String {
        switch self {
        case .failed(let why): return why
        case .refusedAgain(let reached): return "refused again after the link became \(reached)"
        case .keySizeRefused(let size): return size.map { "refused with a \($0)-octet key" } ?? "refused; the controller did not give the key size"
        }
    }
}

/// What a GATT call was doing when it failed; its text is the verb of the error message.
public enum GATTOperation: String, Sendable, Hashable, CustomStringConvertible {
    case reading = "reading"
    case writing = "writing"
    case writingWithoutResponse = "writing without response to"
    case signedWriting = "signed writing to"
    case reliablyWriting = "reliably writing"
    case discovering = "discovering"
    case rediscovering = "re-discovering"
    case discoveringCharacteristics = "discovering characteristics of"
    case discoveringDescriptors = "discovering descriptors of"
    case findingIncludedServices = "finding included services of"
    case exchangingMTU = "exchanging the MTU with"
    case enablingIndications = "enabling indications of"
    case subscribing = "subscribing to"
    case disablingNotifications = "disabling notifications of"
    case awaitingNotification = "awaiting a notification from"
    case waitingForCCCDWrite = "waiting for the CCCD write of"
    case waitingForPreparation = "waiting for the ATT bearer to be prepared for"
    case waitingForRestore = "waiting for the link to be restored to"
    /// Subscribing to notifications, as a property a characteristic may lack.
    case notifications = "notifications"
    /// Subscribing to indications, as a property a characteristic may lack.
    case indications = "indications"

    public var description: String { rawValue }
}

/// The attribute (or attributes) a GATT error is about.
///
///     if case .attribute(let uuid, let handle) = error.target { print(uuid, handle ?? 0) }
public enum GATTTarget: Sendable, Hashable, CustomStringConvertible {
    /// A service, characteristic or descriptor: its type and, when known, its handle (the
    /// value handle of a characteristic).
    case attribute(BluetoothUUID, handle: UInt16?)
    /// Several characteristics at once (Read Multiple, Reliable Writes).
    case attributes([BluetoothUUID], handles: [UInt16])
    /// The primary services in a handle range.
    case services(ATTHandleRange)
    /// An attribute known by its handle alone.
    case handle(UInt16)
    /// The server as a whole (the MTU exchange, waiting for the link).
    case server

    /// The attribute's type, when the target is one attribute of known type.
    public var uuid: BluetoothUUID? {
        if case .attribute(let uuid, _) = self { return uuid }
        return nil
    }

    /// The attribute's handle, when the target is one attribute with a known handle.
    public var handle: UInt16? {
        switch self {
        case .attribute(_, let handle): return handle
        case .handle(let handle): return handle
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .attribute(let uuid, let handle):
            return uuid.gattDisplayName + (handle.map { " at handle \($0.hex)" } ?? "")
        case .attributes(let uuids, _):
            return uuids.map(\.gattDisplayName).joined(separator: ", ")
        case .services(let range):
            return range == .all ? "the primary services" : "the services in \(range)"
        case .handle(let handle):
            return "handle \(handle.hex)"
        case .server:
            return "the server"
        }
    }
}
