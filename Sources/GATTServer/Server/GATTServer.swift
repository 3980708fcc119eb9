import Dispatch
import GATTClient
import SMP
import BLETransport
import BLEWire
import BLECore
import ATT

/// A GATT server (Core Spec 5.4, Vol 3, Part F, 3.4; Part G, 4): lays out a `GATTDatabase`
/// and answers every ATT request of every client, keeps the CCCDs, Client Supported Features
/// and prepare queue per link (per bond for bonded clients, across links), serves values
/// from the table or from async handlers, enforces permissions from the link's security,
/// and sends notifications and indications. Every `ATTServerLink` call comes on `queue`;
/// the async methods hop there. Everything the server changes is confined to `queue`
/// (`QueueConfined`): debug builds check every access.
///
///     let server = GATTServer(database: db, queue: executor.queue)
///     server.connect(link)                         // on the queue, for each ATT bearer
///     server.receive(pdu, on: link)                // each PDU from the client
///     await server.notify(characteristic: level, value: [87])
public final class GATTServer: Sendable {
    /// One bearer's state, a class so that a request finds it with one dictionary lookup and
    /// changes it in place.
    package final class LinkState {
        package let link: any ATTServerLink
        /// The link's flow control, cast once (nil: it always takes a PDU).
        package let flow: (any ATTServerLinkFlowControl)?
        /// The link's security, cast once (nil: unencrypted).
        package let security: (any ATTServerLinkSecurity)?
        package var mtu: UInt16 = 23
        package var prepareQueue: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
        package var preparedBytes = 0
        package var cccd: [UInt16: UInt16] = [:]
        /// Client Supported Features (Vol 3, Part G, 7.2), octet 0.
        package var clientFeatures: UInt8 = 0
        /// False once the database changed under this client until it learns of it (Part G, 2.5.2.1).
        package var changeAware = true
        /// Database Out Of Sync was sent since the client became change-unaware.
        package var outOfSyncSent = false
        /// An async handler is answering this link's request: the next one waits for it.
        package var answering = false
        /// Requests that came while `answering` (a client may have one in flight, so at most one).
        package var waiting: [[UInt8]] = []
        /// The bearer ended after an unconfirmed indication: nothing more is sent or handled.
        package var ended = false
        /// Indications waiting for their Handle Value Confirmation, oldest first, by id.
        package var confirmationWaiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>?)] = []
        package var indicationTimer: (any ScheduledTimer)?
        /// Commands (Write Command to a handler, Signed Write Command) whose handler or
        /// verifier still runs; at most `commandLimit`, later ones are dropped.
        package var commandsRunning = 0
        /// The link's notification queue and counters.
        package let notifications = LinkNotifications()
        /// A Service Changed indication is unconfirmed: its confirmation makes the client change-aware.
        package var serviceChangedSent = false
        /// On an enhanced ATT bearer: the client's unenhanced bearer, which keeps the client's
        /// CCCDs and Client Supported Features (per client, not per bearer: Vol 3, Part G,
        /// 3.3.3.3 and 7.2) and takes its notifications and indications.
        package var client: ObjectIdentifier?
        init(link: any ATTServerLink) {
            self.link = link
            self.flow = link as? any ATTServerLinkFlowControl
            self.security = link as? any ATTServerLinkSecurity
        }

        /// A change-unaware client with robust caching: its next request may get Database Out
        /// Of Sync (Part G, 2.5.2.1), so it takes the general path.
        var mayBeOutOfSync: Bool { clientFeatures & 0x01 != 0 && !changeAware }
    }

    /// What is remembered of a bonded client between links (Vol 3, Part G, 3.3.3.3, 2.5.2.1).
    package struct BondState {
        package var cccd: [UInt16: UInt16] = [:]
        package var clientFeatures: UInt8 = 0
        package var changeAware = true
        package var signCounter: UInt32?
        /// What was last given to the bond store (nil: nothing yet), so only a change is saved.
        package var saved: SavedClientState?
    }

    /// What the bond store keeps of a bonded client (`Bond.clientConfigurations`,
    /// `clientSupportedFeatures`, `clientDatabaseHash`).
    package struct SavedClientState: Equatable {
        package var cccd: [UInt16: UInt16]
        package var features: UInt8
        package var hash: UInt128?
    }

    public let queue: DispatchQueue
    /// The server's Rx MTU.
    public let serverMTU: UInt16
    /// How many Prepare Write Requests a link may queue (Prepare Queue Full beyond).
    public let prepareQueueLimit: Int
    /// How many value octets a link's prepare queue may hold (Prepare Queue Full beyond).
    public let prepareQueueBytes: Int
    /// How long an indication may stay unconfirmed before the bearer ends (Part F, 3.3.3: 30 s).
    public let indicationTimeout: Duration
    /// How many notifications the server holds for one link whose send queue is full
    /// (`ATTServerLinkFlowControl`); more are dropped and counted (`notificationStatistics()`).
    public let notificationQueueLimit: Int
    package let scheduler: any TimerScheduler
    /// Where the server's warnings go (a bond store that fails to save).
    public let logger: BLELogger
    /// Where bonds' CCCDs are saved to their store, one after another, off `queue` (the store
    /// writes files).
    let bondWrites = DispatchQueue(label: "ble.gatt-server.bonds")
    /// How many commands of one link may wait for a handler or the signature verifier.
    package let commandLimit = 8
    /// Everything the server changes, on `queue`.
    let state: QueueConfined<State>

    struct State {
        var table: AttributeTable
        var links: [ObjectIdentifier: LinkState] = [:]
        var bonds: [LEAddress: BondState] = [:]
        var authorize: (@Sendable (GATTRequest) -> Bool)?
        var signedWrites: (any SignedWriteVerifier)?
        var hooks: (any GATTServerHooks)?
        var responseBuffer: [UInt8] = []
        var nextConfirmationWaiter: UInt64 = 0
        var unaddedConfirmationWaiters: Set<UInt64> = []
        var dropped = 0
        var notificationsSent = 0
        var notificationsDropped = 0
        var activityObservers: [UInt64: AsyncStream<GATTServerActivity>.Continuation] = [:]
        var nextActivityObserver: UInt64 = 0
    }

    package var table: AttributeTable {
        get { state.value.table }
        _modify { yield &state.value.table }
    }
    package var links: [ObjectIdentifier: LinkState] {
        get { state.value.links }
        _modify { yield &state.value.links }
    }
    package var bonds: [LEAddress: BondState] {
        get { state.value.bonds }
        _modify { yield &state.value.bonds }
    }
    /// Decides `readAuthorized` / `writeAuthorized` attributes (on the queue); nil refuses them.
    package var authorize: (@Sendable (GATTRequest) -> Bool)? {
        get { state.value.authorize }
        _modify { yield &state.value.authorize }
    }
    /// Verifies Signed Write Commands; nil drops them.
    package var signedWrites: (any SignedWriteVerifier)? {
        get { state.value.signedWrites }
        _modify { yield &state.value.signedWrites }
    }
    /// Test instrumentation (BLETestSupport).
    package var hooks: (any GATTServerHooks)? {
        get { state.value.hooks }
        _modify { yield &state.value.hooks }
    }
    /// Where the direct read path writes its responses (`answerStoredRead`).
    var responseBuffer: [UInt8] {
        get { state.value.responseBuffer }
        _modify { yield &state.value.responseBuffer }
    }
    var nextConfirmationWaiter: UInt64 {
        get { state.value.nextConfirmationWaiter }
        _modify { yield &state.value.nextConfirmationWaiter }
    }
    /// Confirmation waiters whose id was taken and that are not in line yet.
    var unaddedConfirmationWaiters: Set<UInt64> {
        get { state.value.unaddedConfirmationWaiters }
        _modify { yield &state.value.unaddedConfirmationWaiters }
    }
    /// PDUs dropped because they were malformed commands, unverified signed writes or came
    /// on an ended bearer.
    package var dropped: Int {
        get { state.value.dropped }
        _modify { yield &state.value.dropped }
    }
    /// Notifications sent and dropped over every link since the server was made.
    package var notificationsSent: Int {
        get { state.value.notificationsSent }
        _modify { yield &state.value.notificationsSent }
    }
    package var notificationsDropped: Int {
        get { state.value.notificationsDropped }
        _modify { yield &state.value.notificationsDropped }
    }
    /// The subscribers of `activity()`, by id.
    var activityObservers: [UInt64: AsyncStream<GATTServerActivity>.Continuation] {
        get { state.value.activityObservers }
        _modify { yield &state.value.activityObservers }
    }
    var nextActivityObserver: UInt64 {
        get { state.value.nextActivityObserver }
        _modify { yield &state.value.nextActivityObserver }
    }

    /// - Parameters:
    ///   - serverMTU: this side's ATT_MTU (Exchange MTU answers with it).
    ///   - prepareQueueLimit, prepareQueueBytes: bounds of each link's prepare queue.
    ///   - notificationQueueLimit: notifications held for one link that cannot send.
    ///   - scheduler: where the indication and notification timeouts come from (the queue's timers by default).
    ///   - logger: where warnings go (a bond store that cannot save, with the errno).
    public init(database: GATTDatabase, queue: DispatchQueue, serverMTU: UInt16 = 517, prepareQueueLimit: Int = 64,
                prepareQueueBytes: Int = 4096, indicationTimeout: Duration = .seconds(30), notificationQueueLimit: Int = 32,
                scheduler: (any TimerScheduler)? = nil, logger: BLELogger = .silent) {
        self.logger = logger
        self.state = QueueConfined(State(table: AttributeTable(database)), on: queue)
        self.queue = queue
        self.serverMTU = max(23, serverMTU)
        self.prepareQueueLimit = prepareQueueLimit
        self.prepareQueueBytes = prepareQueueBytes
        self.indicationTimeout = indicationTimeout
        self.notificationQueueLimit = max(1, notificationQueueLimit)
        self.scheduler = scheduler ?? DispatchTimerScheduler(queue: queue)
    }

    /// A server whose test instrumentation is there from the start (BLETestSupport's faults
    /// and records), before the server is shared: `hooks` is confined to `queue` like the rest.
    package init(database: GATTDatabase, queue: DispatchQueue, serverMTU: UInt16, prepareQueueLimit: Int, hooks: any GATTServerHooks) {
        self.logger = .silent
        self.state = QueueConfined(State(table: AttributeTable(database), hooks: hooks), on: queue)
        self.queue = queue
        self.serverMTU = max(23, serverMTU)
        self.prepareQueueLimit = prepareQueueLimit
        self.prepareQueueBytes = 4096
        self.indicationTimeout = .seconds(30)
        self.notificationQueueLimit = 32
        self.scheduler = DispatchTimerScheduler(queue: queue)
    }

    /// The activity streams end with the server (on its queue: the last reference may go anywhere).
    deinit {
        let state = self.state
        queue.async { for c in state.value.activityObservers.values { c.finish() } }
    }

    // MARK: Links (on the queue)

    /// A client connected on `link` (call on `queue`). A bonded link gets its bond's CCCDs back.
    public func connect(_ link: any ATTServerLink) {
        let state = LinkState(link: link)
        if let peer = bondedPeer(link), let bond = bonds[peer] {
            state.cccd = bond.cccd; state.clientFeatures = bond.clientFeatures; state.changeAware = bond.changeAware
        }
        links[ObjectIdentifier(link)] = state
        report(.connected(peer: link.centralDescription))
        hooks?.changed(self)
    }

    /// `link` became encrypted (call on `queue`): when it is now bonded (`ATTServerLinkBond`),
    /// the CCCDs its bond kept from earlier links come back under those this link wrote, and
    /// the bond keeps the result, and each CCCD restored is reported as `subscribed`; its
    /// Client Supported Features come back, and a bond that is change-unaware makes the link
    /// so (Part G, 2.5.2.1). `stored`, the bond as its store keeps it, is what the server
    /// starts from for a bond it has not seen since it was made. An unbonded link is left as
    /// it is.
    package func restoreBondState(_ link: any ATTServerLink, stored: Bond? = nil) {
        let id = ObjectIdentifier(link)
        guard let state = links[id], let peer = bondedPeer(link) else { return }
        if bonds[peer] == nil, let stored { bonds[peer] = bondState(from: stored) }
        if let bond = bonds[peer] {
            let restored = bond.cccd.filter { state.cccd[$0.key] == nil && $0.value != 0 }
            links[id]?.cccd.merge(restored) { current, _ in current }
            for (handle, value) in restored.sorted(by: { $0.key < $1.key }) {
                reportStore([UInt8(value & 0xFF), UInt8(value >> 8)], handle: handle, link: id)
            }
            if state.clientFeatures == 0 { state.clientFeatures = bond.clientFeatures }
            if !bond.changeAware, state.changeAware { state.changeAware = false; state.outOfSyncSent = false }
        }
        rememberBondState(id)
        hooks?.changed(self)
    }

    /// The client on `link` went (call on `queue`): its waits end, its per-link state goes.
    public func disconnect(_ link: any ATTServerLink) {
        defer { hooks?.changed(self) }
        if let state = links.removeValue(forKey: ObjectIdentifier(link)) {
            state.indicationTimer?.cancel()
            for w in state.confirmationWaiters { w.continuation?.resume(returning: false) }
            linkGone(state, id: ObjectIdentifier(link))
            if state.client == nil { report(.disconnected(peer: link.centralDescription)) }
        }
    }

    /// An enhanced ATT bearer of the client whose unenhanced bearer is `client` (call on
    /// `queue`), with `mtu` as its ATT_MTU: it answers requests on its own, and the client's
    /// CCCDs and features stay with `client`.
    package func connectEnhanced(_ link: any ATTServerLink, client: any ATTServerLink, mtu: UInt16) {
        let state = LinkState(link: link)
        state.client = ObjectIdentifier(client)
        state.mtu = max(23, mtu)
        links[ObjectIdentifier(link)] = state
        hooks?.changed(self)
    }

    /// The link that keeps the client state of link `id`: itself, or for an enhanced bearer
    /// the client's unenhanced one (`id` when that one is gone).
    func clientOf(_ id: ObjectIdentifier) -> ObjectIdentifier {
        guard let client = links[id]?.client, links[client] != nil else { return id }
        return client
    }

    /// One ATT PDU from the client on `link` (call on `queue`); the answer goes back through
    /// the link. Malformed or unknown requests get an Error Response, never a trap.
    public func receive(_ pdu: [UInt8], on link: any ATTServerLink) {
        let id = ObjectIdentifier(link)
        // 0x0A: Read Request, opcode and handle (Vol 3, Part F, 3.4.4.3).
        if hooks == nil, pdu.count == 3, pdu[0] == 0x0A, let state = links[id],
           !state.ended, !state.answering, !state.mayBeOutOfSync, answerStoredRead(pdu, state: state, link: id) { return }
        defer { hooks?.changed(self) }
        if links[id] == nil { connect(link) }
        guard let first = pdu.first, links[id]?.ended == false else { dropped += 1; return }
        let opcode = ATTOpcode(first)
        let isRequest = opcode.kind == .request || opcode.kind == .unknown && !opcode.isCommand
        if let hooks, !hooks.received(opcode, isRequest: isRequest) { return }
        if opcode == .handleValueConfirmation { return confirmationReceived(link: id) }
        if isRequest, links[id]?.answering == true {
            // A second request before the answer to the first (Part F, 3.3.2): kept, bounded.
            if links[id]?.waiting.isEmpty == true { links[id]?.waiting.append(pdu) } else { dropped += 1 }
            return
        }
        process(pdu, opcode: opcode, isRequest: isRequest, link: id)
    }

    func process(_ pdu: [UInt8], opcode: ATTOpcode, isRequest: Bool, link id: ObjectIdentifier) {
        guard let state = links[id] else { return }
        if pdu.count > Int(state.mtu) {
            // Longer than ATT_MTU (Part F, 3.2.8): a request is refused, a command dropped.
            if isRequest { send(.errorResponse(request: opcode, handle: 0, error: .invalidPDU), to: id) } else { dropped += 1 }
            return
        }
        let decoded: ATTPDU
        do throws(DecodeError) {
            decoded = try ATTPDU(bytes: pdu)
        } catch {
            if isRequest { send(.errorResponse(request: opcode, handle: 0, error: .invalidPDU), to: id) } else { dropped += 1 }
            return
        }
        let request = hooks?.request(decoded) ?? decoded
        switch awareness(request, link: id) {
        case .handle: break
        case .ignore: return
        case .refuse(let refusal): return send(refusal, to: id)
        }
        switch handle(request, pdu: pdu, link: id) {
        case .none:
            return
        case .answer(let response):
            if isRequest { send(response, to: id) }
        case .deferred(let work):
            links[id]?.answering = true
            Task {
                let response = await work()
                self.queue.async { self.finishDeferred(response, to: id) }
            }
        }
    }

    /// The direct path of a Read Request (Vol 3, Part F, 3.4.4.3) of an attribute that
    /// `readsDirectly`: the handle read in place, the Read Response written into a buffer the
    /// server keeps (no allocation while the link does not keep the array it was given). False
    /// when the attribute needs the general path (unknown handle, permissions, handlers).
    private func answerStoredRead(_ pdu: [UInt8], state: LinkState, link id: ObjectIdentifier) -> Bool {
        let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        guard let i = table.index(of: handle), table.attributes[i].readsDirectly else { return false }
        let value = table.attributes[i].value
        if !activityObservers.isEmpty { reportReads([handle], values: [value], offset: 0, link: id) }
        responseBuffer.removeAll(keepingCapacity: true)
        responseBuffer.append(0x0B)   // Read Response
        responseBuffer.append(contentsOf: value.prefix(Int(state.mtu) - 1))
        state.link.sendToCentral(responseBuffer)
        return true
    }

    private func finishDeferred(_ response: ATTPDU?, to id: ObjectIdentifier) {
        defer { hooks?.changed(self) }
        guard links[id] != nil else { return }
        links[id]?.answering = false
        if let response { send(response, to: id) }
        if let next = links[id]?.waiting.first {
            links[id]?.waiting.removeFirst()
            process(next, opcode: ATTOpcode(next[0]), isRequest: true, link: id)
        }
    }

    /// Runs a command's async work (a write handler, the signature verifier) unless the link
    /// already has `commandLimit` running: a flood of commands is dropped and counted, not
    /// queued without bound.
    func runCommand(link id: ObjectIdentifier, _ work: @escaping @Sendable () async -> Void) {
        guard let running = links[id]?.commandsRunning, running < commandLimit else { dropped += 1; return }
        links[id]?.commandsRunning = running + 1
        Task {
            await work()
            self.queue.async {
                self.links[id]?.commandsRunning -= 1
                self.hooks?.changed(self)
            }
        }
    }

    /// Sends `response` on link `id` (through the hooks' rewrite in tests).
    func send(_ response: ATTPDU, to id: ObjectIdentifier) {
        guard let state = links[id], !state.ended else { return }
        let pdu = hooks?.response(response) ?? response
        state.link.sendToCentral(pdu.bytes)
    }

    // MARK: Controls

    /// Runs `body` on the server's queue.
    package func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }

    /// The value handle of the first characteristic with `uuid`.
    ///
    ///     let handle = await server.valueHandle(of: BluetoothUUID("2A19")!)
    public func valueHandle(of uuid: BluetoothUUID) async -> UInt16? {
        await onQueue { self.valueHandleOnQueue(uuid) }
    }

    /// The current stored value of the first characteristic with `uuid`.
    public func value(of uuid: BluetoothUUID) async -> [UInt8]? {
        await onQueue { self.valueHandleOnQueue(uuid).flatMap { self.table.index(of: $0) }.map { self.table.attributes[$0].value } }
    }

    /// Sets the value of the first characteristic with `uuid` without telling anyone (the
    /// next read returns it); false when there is no such characteristic.
    ///
    ///     await server.setValue([87], of: batteryLevel)
    @discardableResult
    public func setValue(_ value: [UInt8], of uuid: BluetoothUUID) async -> Bool {
        await onQueue {
            guard let handle = self.valueHandleOnQueue(uuid), let i = self.table.index(of: handle) else { return false }
            self.table.attributes[i].value = value
            return true
        }
    }

    /// The CCCD value of `characteristic` for every connected link (0 when never written).
    public func clientConfigurations(of characteristic: BluetoothUUID) async -> [UInt16] {
        await onQueue {
            guard let cccd = self.cccdHandle(of: characteristic) else { return [] }
            return self.links.values.map { $0.cccd[cccd] ?? 0 }
        }
    }

    /// The Database Hash of the current database (Vol 3, Part G, 7.3), as read by a client.
    public func databaseHash() async -> [UInt8] { await onQueue { self.table.hash } }

    /// Allows or refuses `readAuthorized` / `writeAuthorized` attributes, per request (runs on the queue).
    ///
    ///     await server.setAuthorization { $0.bondedPeer != nil }
    public func setAuthorization(_ decide: (@Sendable (GATTRequest) -> Bool)?) async {
        await onQueue { self.authorize = decide }
    }

    /// Verifies Signed Write Commands with `verifier` (without one they are dropped).
    public func setSignedWriteVerifier(_ verifier: (any SignedWriteVerifier)?) async {
        await onQueue { self.signedWrites = verifier }
    }

    /// Replaces the database (keeping per-link CCCDs by handle). Every client becomes
    /// change-unaware (Part G, 2.5.2.1) until it confirms Service Changed, reads the
    /// Database Hash or is told Database Out Of Sync; send Service Changed after.
    public func replaceDatabase(_ database: GATTDatabase) async {
        await onQueue {
            self.table = AttributeTable(database)
            for id in self.links.keys { self.links[id]?.changeAware = false; self.links[id]?.outOfSyncSent = false }
            for peer in self.bonds.keys { self.bonds[peer]?.changeAware = false }
            // Connected bonded clients' stores learn it now (the others' keep the old hash).
            for id in self.links.keys { self.rememberBondState(id) }
        }
    }

    /// PDUs dropped so far (malformed commands, unverified signed writes, ended bearers, floods).
    public func droppedCount() async -> Int { await onQueue { self.dropped } }


    // MARK: Lookups (on the queue)

    package func valueHandleOnQueue(_ uuid: BluetoothUUID) -> UInt16? {
        table.attributes.first { if case .value = $0.kind { return $0.type == uuid } else { return false } }?.handle
    }

    package func cccdHandle(of characteristic: BluetoothUUID) -> UInt16? {
        guard let v = valueHandleOnQueue(characteristic) else { return nil }
        return cccdHandle(forValue: v)
    }

    package func cccdHandle(forValue valueHandle: UInt16) -> UInt16? {
        table.attributes.first { if case .cccd(let v, _) = $0.kind { return v == valueHandle } else { return false } }?.handle
    }

    func bondedPeer(_ link: any ATTServerLink) -> LEAddress? { (link as? any ATTServerLinkBond)?.bondedPeer }
}

/// Instrumentation of a `GATTServer` for tests (BLETestSupport's fault injection and records).
/// Every call comes on the server's queue.
package protocol GATTServerHooks: AnyObject {
    /// A PDU arrived; false: the server neither handles nor answers it.
    func received(_ opcode: ATTOpcode, isRequest: Bool) -> Bool
    /// The request as the server handles it.
    func request(_ pdu: ATTPDU) -> ATTPDU
    /// The answer as the server sends it.
    func response(_ pdu: ATTPDU) -> ATTPDU
    /// A write was applied to `handle`.
    func applied(handle: UInt16, value: [UInt8])
    /// Something observable changed (a PDU, a link).
    func changed(_ server: GATTServer)
}
