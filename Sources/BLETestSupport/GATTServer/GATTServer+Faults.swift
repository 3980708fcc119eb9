import Dispatch
import GATTServer
import ATT
import BLEWire

extension GATTServer {
    /// Deliberate protocol violations of a test server.
    public struct Faults: Sendable {
        /// Answer this many requests, then none (the client's transaction timer must fire).
        public var stopAnsweringAfter: Int?
        /// How Prepare Write Responses misreport the request.
        public var prepareWriteEcho: EchoFault?
        /// Read By Group Type always answers with the first services, whatever the start
        /// handle (handles that do not increase).
        public var repeatDiscoveryResponses = false
        public init(stopAnsweringAfter: Int? = nil, prepareWriteEcho: EchoFault? = nil, repeatDiscoveryResponses: Bool = false) {
            self.stopAnsweringAfter = stopAnsweringAfter; self.prepareWriteEcho = prepareWriteEcho
            self.repeatDiscoveryResponses = repeatDiscoveryResponses
        }
    }

    public enum EchoFault: Sendable { case handle, offset, value }

    /// A server that misbehaves as `faults` says, and records what it receives and applies.
    ///
    ///     let server = GATTServer(database: .lab(), queue: executor.queue, faults: .init(stopAnsweringAfter: 2))
    public convenience init(database: GATTDatabase, queue: DispatchQueue, serverMTU: UInt16 = 517, prepareQueueLimit: Int = 64, faults: Faults) {
        self.init(database: database, queue: queue, serverMTU: serverMTU, prepareQueueLimit: prepareQueueLimit,
                  hooks: GATTServerRecords(faults: faults))
    }

    /// The records of this server, kept from its first link on (installed on the queue).
    var records: GATTServerRecords {
        if let r = hooks as? GATTServerRecords { return r }
        let r = GATTServerRecords(faults: Faults())
        hooks = r
        return r
    }

    /// The opcodes of every PDU received so far (on the queue).
    var log: [ATTOpcode] { records.log }
    /// Every value write applied so far (on the queue).
    var writes: [(handle: UInt16, value: [UInt8])] { records.writes }
    /// How many requests were answered (on the queue).
    var answered: Int { records.answered }
    var faults: Faults { records.faults }

    /// The opcodes of every PDU received so far.
    public func receivedOpcodes() async -> [ATTOpcode] { await onQueue { self.log } }
    /// Every value write applied so far (Write Request, Write Command, Execute Write).
    public func appliedWrites() async -> [(handle: UInt16, value: [UInt8])] {
        await onQueue { self.writes.map { (handle: $0.handle, value: $0.value) } }
    }
    /// Replaces the faults.
    public func setFaults(_ faults: Faults) async { await onQueue { self.records.faults = faults } }
}

extension GATTServer: SimulatedATTServer {
    public func linkConnected(_ link: any ATTServerLink) {
        _ = records
        connect(link)
    }

    public func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        _ = records
        receive(pdu, on: link)
    }

    public func linkDisconnected(_ link: any ATTServerLink) { disconnect(link) }
}

/// What a test server records and how it misbehaves (on the server's queue).
final class GATTServerRecords: GATTServerHooks {
    var faults: GATTServer.Faults
    var answered = 0
    var log: [ATTOpcode] = []
    var writes: [(handle: UInt16, value: [UInt8])] = []
    /// Tests in `waitUntil`, by id, and ids whose wait ended before it was added.
    var conditionWaiters: [UInt64: GATTServer.ConditionWaiter] = [:]
    var cancelledConditionWaiters: Set<UInt64> = []
    var nextConditionWaiter: UInt64 = 0

    init(faults: GATTServer.Faults) { self.faults = faults }

    func received(_ opcode: ATTOpcode, isRequest: Bool) -> Bool {
        log.append(opcode)
        guard isRequest else { return true }
        if let limit = faults.stopAnsweringAfter, answered >= limit { return false }
        answered += 1
        return true
    }

    func request(_ pdu: ATTPDU) -> ATTPDU {
        if faults.repeatDiscoveryResponses, case .readByGroupTypeRequest(var range, let type) = pdu, range.start != 0, range.start <= range.end {
            range.start = 1
            return .readByGroupTypeRequest(range: range, type: type)
        }
        return pdu
    }

    func response(_ pdu: ATTPDU) -> ATTPDU {
        guard let echo = faults.prepareWriteEcho, case .prepareWriteResponse(let handle, let offset, let value) = pdu else { return pdu }
        switch echo {
        case .handle: return .prepareWriteResponse(handle: handle &+ 1, offset: offset, value: value)
        case .offset: return .prepareWriteResponse(handle: handle, offset: offset &+ 1, value: value)
        case .value: return .prepareWriteResponse(handle: handle, offset: offset, value: value.map { $0 ^ 0xFF })
        }
    }

    func applied(handle: UInt16, value: [UInt8]) { writes.append((handle, value)) }

    func changed(_ server: GATTServer) { server.checkConditions() }
}
