import Dispatch
import GATTClient

/// Reports the security of a test link, so a `GATTServer` can enforce encryption and
/// authentication permissions. Links that do not conform count as unencrypted.
public protocol ATTServerLinkSecurity: AnyObject {
    var isEncrypted: Bool { get }
    var isAuthenticated: Bool { get }
    /// The encryption key size in octets (7...16) while encrypted.
    var encryptionKeySize: Int { get }
}

extension ATTServerLinkSecurity {
    /// A full-size key unless the link says otherwise.
    public var encryptionKeySize: Int { 16 }
}

/// A GATT server for tests: lays out a `GATTDatabase` and answers every ATT request as the
/// Core Specification says (Vol 3, Part F, 3.4; Part G, 4), keeps CCCDs and the prepare
/// queue per link, pushes notifications and indications, and can misbehave on purpose
/// (`Faults`). All `SimulatedATTServer` calls come on `queue`; the async methods hop there.
///
///     let server = GATTServer(database: .lab(), queue: executor.queue)
///     let channel = LoopbackATTChannel(server: server, executor: executor)
///     try await server.notify(characteristic: counter, value: [1, 0, 0, 0])
public final class GATTServer: SimulatedATTServer, @unchecked Sendable { // all state is touched only on `queue`
    /// Deliberate protocol violations.
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

    struct LinkState {
        let link: any ATTServerLink
        var mtu: UInt16 = 23
        var prepareQueue: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
        var cccd: [UInt16: UInt16] = [:]
        /// Indications waiting for their Handle Value Confirmation, oldest first, by id.
        var confirmationWaiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>?)] = []
    }

    public let queue: DispatchQueue
    /// The server's Rx MTU.
    public let serverMTU: UInt16
    /// How many Prepare Write Requests a link may queue (Prepare Queue Full beyond).
    public let prepareQueueLimit: Int
    var table: AttributeTable
    var links: [ObjectIdentifier: LinkState] = [:]
    var faults: Faults
    var answered = 0
    var log: [ATTOpcode] = []
    var writes: [(handle: UInt16, value: [UInt8])] = []
    var nextConfirmationWaiter: UInt64 = 0
    /// Confirmation waiters whose id was taken and that are not in line yet.
    var unaddedConfirmationWaiters: Set<UInt64> = []
    /// Tests in `waitUntil`, by id, and ids whose wait ended before it was added.
    var conditionWaiters: [UInt64: ConditionWaiter] = [:]
    var cancelledConditionWaiters: Set<UInt64> = []
    var nextConditionWaiter: UInt64 = 0

    public init(database: GATTDatabase, queue: DispatchQueue, serverMTU: UInt16 = 517, prepareQueueLimit: Int = 64, faults: Faults = Faults()) {
        self.table = AttributeTable(database)
        self.queue = queue
        self.serverMTU = max(23, serverMTU)
        self.prepareQueueLimit = prepareQueueLimit
        self.faults = faults
    }

    // MARK: SimulatedATTServer

    public func linkConnected(_ link: any ATTServerLink) {
        links[ObjectIdentifier(link)] = LinkState(link: link)
        checkConditions()
    }

    public func linkDisconnected(_ link: any ATTServerLink) {
        defer { checkConditions() }
        if let state = links.removeValue(forKey: ObjectIdentifier(link)) {
            for w in state.confirmationWaiters { w.continuation?.resume(returning: false) }
        }
    }

    public func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        defer { checkConditions() }
        let id = ObjectIdentifier(link)
        if links[id] == nil { links[id] = LinkState(link: link) }
        guard let first = pdu.first else { return }
        let opcode = ATTOpcode(first)
        log.append(opcode)
        if opcode == .handleValueConfirmation {
            if links[id]?.confirmationWaiters.isEmpty == false { links[id]?.confirmationWaiters.removeFirst().continuation?.resume(returning: true) }
            return
        }
        let isRequest = opcode.kind == .request || opcode.kind == .unknown && !opcode.isCommand
        if isRequest {
            if let limit = faults.stopAnsweringAfter, answered >= limit { return }
            answered += 1
        }
        let response: ATTPDU?
        do throws(DecodeError) {
            response = handle(try ATTPDU(bytes: pdu), link: id)
        } catch {
            response = isRequest ? .errorResponse(request: opcode, handle: 0, error: .invalidPDU) : nil
        }
        if let response, isRequest { link.sendToCentral(response.bytes) }
    }

    // MARK: Test controls

    /// Runs `body` on the server's queue.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }

    /// The value handle of the first characteristic with `uuid`.
    public func valueHandle(of uuid: BluetoothUUID) async -> UInt16? {
        await onQueue { self.table.attributes.first { if case .value = $0.kind { return $0.type == uuid } else { return false } }?.handle }
    }

    /// The current value of the first characteristic with `uuid`.
    public func value(of uuid: BluetoothUUID) async -> [UInt8]? {
        await onQueue { self.table.attributes.first { if case .value = $0.kind { return $0.type == uuid } else { return false } }?.value }
    }

    /// The CCCD value of `characteristic` for every connected link (0 when never written).
    public func clientConfigurations(of characteristic: BluetoothUUID) async -> [UInt16] {
        await onQueue {
            guard let cccd = self.cccdHandle(of: characteristic) else { return [] }
            return self.links.values.map { $0.cccd[cccd] ?? 0 }
        }
    }

    /// The opcodes of every PDU received so far.
    public func receivedOpcodes() async -> [ATTOpcode] { await onQueue { self.log } }
    /// Every value write applied so far (Write Request, Write Command, Execute Write).
    public func appliedWrites() async -> [(handle: UInt16, value: [UInt8])] {
        await onQueue { self.writes.map { (handle: $0.handle, value: $0.value) } }
    }
    /// Replaces the faults.
    public func setFaults(_ faults: Faults) async { await onQueue { self.faults = faults } }

    /// Replaces the database (keeping per-link CCCDs by handle); send Service Changed after.
    public func replaceDatabase(_ database: GATTDatabase) async {
        await onQueue { self.table = AttributeTable(database) }
    }

    /// Sends a Handle Value Notification of `value` (cut to ATT_MTU - 3) to every link that
    /// enabled notifications of `characteristic`; returns how many links it went to.
    @discardableResult
    public func notify(characteristic: BluetoothUUID, value: [UInt8]) async -> Int {
        await onQueue { self.notifyOnQueue(characteristic: characteristic, value: value) }
    }

    func notifyOnQueue(characteristic: BluetoothUUID, value: [UInt8]) -> Int {
        guard let valueHandle = valueHandleOnQueue(characteristic), let cccd = cccdHandle(of: characteristic) else { return 0 }
        if let i = table.index(of: valueHandle) { table.attributes[i].value = value }
        var sent = 0
        for state in links.values where (state.cccd[cccd] ?? 0) & 0x0001 != 0 {
            let part = Array(value.prefix(Int(state.mtu) - 3))
            state.link.sendToCentral(ATTPDU.handleValueNotification(handle: valueHandle, value: part).bytes)
            sent += 1
        }
        return sent
    }

    /// Sends a Handle Value Indication to every link that enabled indications of
    /// `characteristic` and waits for each confirmation; returns how many were confirmed
    /// (a link that drops first does not count). A cancelled task stops waiting at once and
    /// sends no further indication; a confirmation that comes later is taken quietly.
    @discardableResult
    public func indicate(characteristic: BluetoothUUID, value: [UInt8]) async -> Int {
        guard let valueHandle = await valueHandle(of: characteristic) else { return 0 }
        return await indicate(handle: valueHandle, value: value)
    }

    /// Indicates Service Changed (0x2A05) with `range` (Vol 3, Part G, 7.1) to every link
    /// that enabled it; returns how many confirmed.
    @discardableResult
    public func sendServiceChanged(range: ATTHandleRange) async -> Int {
        guard let handle = await onQueue({ self.table.serviceChangedHandle }) else { return 0 }
        var value: [UInt8] = []
        value.appendLE(range.start); value.appendLE(range.end)
        return await indicate(handle: handle, value: value)
    }

    func indicate(handle valueHandle: UInt16, value: [UInt8]) async -> Int {
        let targets: [ObjectIdentifier] = await onQueue {
            guard let cccd = self.cccdHandle(forValue: valueHandle) else { return [] }
            return self.links.filter { (($0.value.cccd[cccd] ?? 0) & 0x0002) != 0 }.map(\.key)
        }
        var confirmed = 0
        for id in targets where !Task.isCancelled {
            let waiter = await onQueue { () -> UInt64 in
                self.nextConfirmationWaiter += 1
                self.unaddedConfirmationWaiters.insert(self.nextConfirmationWaiter)
                return self.nextConfirmationWaiter
            }
            let ok = await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                    queue.async {
                        // Gone from the set: the task was cancelled before this ran.
                        guard self.unaddedConfirmationWaiters.remove(waiter) != nil, let state = self.links[id] else {
                            c.resume(returning: false)
                            return
                        }
                        self.links[id]?.confirmationWaiters.append((waiter, c))
                        let part = Array(value.prefix(Int(state.mtu) - 3))
                        state.link.sendToCentral(ATTPDU.handleValueIndication(handle: valueHandle, value: part).bytes)
                    }
                }
            } onCancel: {
                queue.async { self.stopWaiting(waiter, link: id) }
            }
            if ok { confirmed += 1 }
        }
        return confirmed
    }

    /// The task waiting for confirmation `waiter` was cancelled. An indication not sent yet
    /// never is; one sent stays in line without its caller, so the confirmation that answers
    /// it is still matched to it.
    private func stopWaiting(_ waiter: UInt64, link id: ObjectIdentifier) {
        if unaddedConfirmationWaiters.remove(waiter) != nil { return }
        guard let i = links[id]?.confirmationWaiters.firstIndex(where: { $0.id == waiter }),
              let entry = links[id]?.confirmationWaiters[i] else { return }
        links[id]?.confirmationWaiters[i] = (entry.id, nil)
        entry.continuation?.resume(returning: false)
    }

    // MARK: Lookups (on the queue)

    func valueHandleOnQueue(_ uuid: BluetoothUUID) -> UInt16? {
        table.attributes.first { if case .value = $0.kind { return $0.type == uuid } else { return false } }?.handle
    }

    func cccdHandle(of characteristic: BluetoothUUID) -> UInt16? {
        guard let v = valueHandleOnQueue(characteristic) else { return nil }
        return cccdHandle(forValue: v)
    }

    func cccdHandle(forValue valueHandle: UInt16) -> UInt16? {
        table.attributes.first { if case .cccd(let v, _) = $0.kind { return v == valueHandle } else { return false } }?.handle
    }
}
