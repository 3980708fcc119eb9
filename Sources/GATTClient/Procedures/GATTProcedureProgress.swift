import BLEWire
import ATT

/// A GATT client procedure that takes several ATT requests (Core Spec 5.4, Vol 3, Part G, 4),
/// as errors name it.
public enum GATTProcedureKind: Sendable, Hashable, CustomStringConvertible {
    /// Discover All Primary Services (4.4.1).
    case discoverAllPrimaryServices
    /// Discover Primary Service by Service UUID (4.4.2).
    case discoverPrimaryServices(BluetoothUUID)
    /// Find Included Services (4.5.1).
    case findIncludedServices
    /// Discover All Characteristics of a Service (4.6.1).
    case discoverCharacteristics
    /// Discover All Characteristic Descriptors (4.7.1).
    case discoverDescriptors
    /// Read Long Characteristic Values (4.8.3) of a handle.
    case readLong(handle: UInt16)
    /// Write Long Characteristic Values or Reliable Writes (4.9.4, 4.9.5) of these handles.
    case writeLong(handles: [UInt16])

    public var description: String {
        switch self {
        case .discoverAllPrimaryServices: "Discover All Primary Services"
        case .discoverPrimaryServices(let uuid): "Discover Primary Service by Service UUID \(uuid)"
        case .findIncludedServices: "Find Included Services"
        case .discoverCharacteristics: "Discover All Characteristics of a Service"
        case .discoverDescriptors: "Discover All Characteristic Descriptors"
        case .readLong(let handle): "Read Long Characteristic Values of handle \(handle.hex)"
        case .writeLong(let handles): "Write Long Characteristic Values of handle\(handles.count == 1 ? "" : "s") \(handles.map(\.hex).joined(separator: ", "))"
        }
    }

    /// What `GATTProcedureProgress.found` counts.
    var foundNoun: String {
        switch self {
        case .discoverAllPrimaryServices, .discoverPrimaryServices: "services"
        case .findIncludedServices: "included services"
        case .discoverCharacteristics: "characteristics"
        case .discoverDescriptors: "descriptors"
        case .readLong: "octets read"
        case .writeLong: "octets prepared"
        }
    }
}

/// How far a GATT procedure got before it stopped: for a procedure stopped by its overall
/// limit, what the application has to judge the peer by.
///
///     catch .procedureTimeout(let progress, _, _) { print(progress.responses, progress.found) }
public struct GATTProcedureProgress: Sendable, Hashable, CustomStringConvertible {
    /// The procedure.
    public let procedure: GATTProcedureKind
    /// The handles it covers (discovery), nil for reads and writes.
    public let range: ATTHandleRange?
    /// Responses received (Error Responses included).
    public internal(set) var responses = 0
    /// Attributes found (discovery) or octets read or prepared (long reads and writes).
    public internal(set) var found = 0
    /// The handle the next request would have started at (discovery).
    public internal(set) var nextHandle: UInt16?

    public init(procedure: GATTProcedureKind, range: ATTHandleRange?, responses: Int = 0, found: Int = 0, nextHandle: UInt16? = nil) {
        self.procedure = procedure
        self.range = range
        self.responses = responses
        self.found = found
        self.nextHandle = nextHandle
    }

    public var description: String { "\(procedure): \(details)" }

    /// How far it got, without the procedure's name: "over 0x0001-0xFFFF, 10 responses,
    /// 11 services, next handle 0x0015".
    var details: String {
        var parts: [String] = []
        if let range { parts.append("over \(range)") }
        parts.append("\(responses) response\(responses == 1 ? "" : "s")")
        parts.append("\(found) \(procedure.foundNoun)")
        if let nextHandle { parts.append("next handle \(nextHandle.hex)") }
        return parts.joined(separator: ", ")
    }
}

/// One run of a procedure: its requests share the procedure's deadline and count its progress.
struct GATTProcedureRun {
    let bearer: ATTBearer
    let limit: Duration?
    let deadline: ContinuousClock.Instant?
    var progress: GATTProcedureProgress

    init(_ procedure: GATTProcedureKind, range: ATTHandleRange?, bearer: ATTBearer, limit: Duration?) {
        self.bearer = bearer
        self.limit = limit
        self.deadline = limit.map { bearer.scheduler.now() + $0 }
        self.progress = GATTProcedureProgress(procedure: procedure, range: range, nextHandle: range?.start)
    }

    /// Sends `pdu` and waits for its response, at most until the procedure's deadline.
    mutating func request(_ pdu: ATTPDU) async throws(GATTProcedureError) -> ATTPDU {
        do throws(ATTError) { return try await attRequest(pdu) } catch { throw wrap(error) }
    }

    /// A request where Attribute Not Found means "nothing more": nil then.
    mutating func requestUnlessNotFound(_ pdu: ATTPDU) async throws(GATTProcedureError) -> ATTPDU? {
        do throws(ATTError) { return try await attRequest(pdu) } catch {
            if case .errorResponse(let code, _, _) = error, code == .attributeNotFound { return nil }
            throw wrap(error)
        }
    }

    /// The bearer's answer, waited for until the procedure's deadline at most
    /// (`.deadlinePassed` after it).
    mutating func attRequest(_ pdu: ATTPDU) async throws(ATTError) -> ATTPDU {
        var left: Duration?
        if let deadline {
            let remaining = deadline - bearer.scheduler.now()
            if remaining <= .zero { throw .deadlinePassed(pdu.opcode) }
            left = remaining
        }
        do throws(ATTError) {
            let response = try await bearer.request(pdu, deadline: left)
            progress.responses += 1
            return response
        } catch {
            if case .errorResponse = error { progress.responses += 1 }
            throw error
        }
    }

    /// The procedure's error for `error`: a passed deadline is the procedure's timeout.
    func wrap(_ error: ATTError) -> GATTProcedureError {
        if case .deadlinePassed = error, let limit { return .procedureTimeout(progress, limit: limit) }
        return .att(error)
    }
}
