import Dispatch
import Synchronization
import Testing
import BLETestSupport
import GATTServer
import BLEWire
import BLECore
import SMP

/// The client end of one bearer to a `GATTServer`, as raw PDUs: what the server sends is kept
/// in order, and `next()` waits (bounded) for the next one.
final class CaptureLink: ATTServerLink, ATTServerLinkSecurity, ATTServerLinkBond, ATTServerLinkClosing, ATTServerLinkFlowControl, ATTServerLinkBondStore,
                         @unchecked Sendable { // the security fields are set by the test before traffic; the rest holds `state`
    let centralDescription: String
    var isEncrypted = false
    var isAuthenticated = false
    var encryptionKeySize = 16
    var bondedPeer: LEAddress?
    /// Where the server saves what it keeps of the bonded client.
    let bondStore: (any BondStore)?
    /// False: the server holds notifications for the link until `makeRoom()`.
    var canSend = true
    private var roomWaiters: [@Sendable () -> Void] = []
    private let state = Mutex<(sent: [[UInt8]], waiter: CheckedContinuation<[UInt8]?, Never>?, closed: Bool)>(([], nil, false))

    init(_ description: String = "C0:00:00:00:00:01", bondedPeer: LEAddress? = nil, store: (any BondStore)? = nil) {
        self.centralDescription = description
        self.bondedPeer = bondedPeer
        self.bondStore = store
    }

    func sendToCentral(_ pdu: [UInt8]) {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, Never>? in
            if let w = s.waiter { s.waiter = nil; return w }
            s.sent.append(pdu)
            return nil
        }
        waiter?.resume(returning: pdu)
    }

    func whenCanSend(_ body: @escaping @Sendable () -> Void) { roomWaiters.append(body) }

    /// The link can send again: calls back what `whenCanSend` left (on the server's queue).
    func makeRoom(on queue: DispatchQueue) {
        queue.sync {
            canSend = true
            let waiters = roomWaiters
            roomWaiters = []
            for body in waiters { body() }
        }
    }

    func closeBearer() { state.withLock { $0.closed = true } }
    var closed: Bool { state.withLock { $0.closed } }

    /// PDUs sent and not taken by `next()` yet.
    func drain() -> [[UInt8]] { state.withLock { s in defer { s.sent = [] }; return s.sent } }

    /// The next PDU the server sends, or nil after `seconds` of real time.
    func next(within seconds: Double = 10) async -> [UInt8]? {
        let task = Task {
            await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
                let ready = state.withLock { s -> [UInt8]? in
                    if !s.sent.isEmpty { return s.sent.removeFirst() }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        }
        guard case .success(let pdu)? = await outcome(of: task, within: seconds) else {
            state.withLock { $0.waiter }?.resume(returning: nil)
            state.withLock { $0.waiter = nil }
            return nil
        }
        return pdu
    }
}

/// A server on its own queue with one or more capture links.
struct ServerBed {
    let queue = DispatchQueue(label: "gatt-server-test")
    let server: GATTServer
    let link: CaptureLink

    init(_ database: GATTDatabase = ServerBed.database, prepareQueueLimit: Int = 64, prepareQueueBytes: Int = 4096, notificationQueueLimit: Int = 32,
         scheduler: ((DispatchQueue) -> any TimerScheduler)? = nil, link: CaptureLink = CaptureLink()) {
        server = GATTServer(database: database, queue: queue, prepareQueueLimit: prepareQueueLimit, prepareQueueBytes: prepareQueueBytes,
                            notificationQueueLimit: notificationQueueLimit, scheduler: scheduler?(queue))
        self.link = link
        queue.sync { server.connect(link) }
    }

    /// Connects another link.
    func connect(_ other: CaptureLink) { queue.sync { server.connect(other) } }
    func disconnect(_ other: CaptureLink) { queue.sync { server.disconnect(other) } }

    /// Sends `pdu` (hex) on `link` and returns what the server sent back at once.
    @discardableResult
    func send(_ pdu: String, on other: CaptureLink? = nil) -> [[UInt8]] {
        let l = other ?? link
        queue.sync { server.receive(hex(pdu), on: l) }
        return l.drain()
    }

    /// Sends `pdu` (hex) and returns the single answer (nil if none or more than one).
    func request(_ pdu: String, on other: CaptureLink? = nil) -> [UInt8]? {
        let out = send(pdu, on: other)
        return out.count == 1 ? out[0] : nil
    }

    /// Sends `pdu` (hex) and returns its answer, sent at once or later by a handler.
    func answer(_ pdu: String, on other: CaptureLink? = nil) async -> [UInt8]? {
        let l = other ?? link
        queue.sync { server.receive(hex(pdu), on: l) }
        return await l.next()
    }

    static func uuid128(_ n: UInt8) -> BluetoothUUID { BluetoothUUID("0000FF0\(n)-1234-5678-9ABC-DEF012345678")! }

    /// Handles: 0x0001-0x0006 Generic Attribute (0x0003 Service Changed, 0x0004 its CCCD,
    /// 0x0006 Database Hash); 0x0007-0x000B Battery (0x0009 level = 0x64, 0x000A CCCD,
    /// 0x000B Presentation Format); 0x000C-0x0012 a 128-bit service: 0x000E "abc" (read,
    /// write, at most 20 octets), 0x0010 "key" (read encrypted), 0x0012 "pin" (read
    /// authenticated).
    static let database = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [
            .init(uuid: BluetoothUUID(uuid16: 0x2A19), properties: [.read, .notify], value: [0x64],
                  descriptors: [.presentationFormat(format: 0x04, unit: 0x27AD)]),
        ]),
        .init(uuid: uuid128(1), characteristics: [
            .init(uuid: uuid128(2), properties: [.read, .write], value: Array("abc".utf8), maximumLength: 20),
            .init(uuid: BluetoothUUID(uuid16: 0x2A00), properties: [.read], permissions: [.readEncrypted], value: Array("key".utf8)),
            .init(uuid: BluetoothUUID(uuid16: 0x2A01), properties: [.read], permissions: [.readAuthenticated], value: Array("pin".utf8)),
        ]),
    ])
}

/// Octets from hex with spaces.
func hex(_ text: String) -> [UInt8] { [UInt8](hex: text) ?? [] }
