import Testing
import Synchronization
import BLETestSupport
import GATTServer
import BLEWire
import ATT

/// Values served and writes decided by async handlers that see the requesting peer.
struct HandlerTests {
    static let served = BluetoothUUID(uuid16: 0xFFF1)
    static let guarded = BluetoothUUID(uuid16: 0xFFF2)

    /// 0x0003 served per peer (refused with 0x80 for C0:00:00:00:00:02), 0x0005 written
    /// through a handler that accepts only 0x01, 0x0007 readable once authorized.
    static func database(writes: Writes) -> GATTDatabase {
        GATTDatabase(services: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
                .init(uuid: served, properties: [.read], onRead: { request in
                    request.peer == "C0:00:00:00:00:02" ? .refused(ATTErrorCode(0x80)) : .value(Array(request.peer.utf8))
                }),
                .init(uuid: guarded, properties: [.write], onWrite: { _, value in
                    writes.values.withLock { $0.append(value) }
                    return value == [0x01] ? nil : ATTErrorCode(0x81)
                }),
                .init(uuid: BluetoothUUID(uuid16: 0xFFF3), properties: [.read], permissions: [.readAuthorized], value: [0x2A]),
            ]),
        ], includesGATTService: false)
    }

    @Test func readHandlerSeesThePeer() async {
        let writes = Writes()
        let bed = ServerBed(Self.database(writes: writes))
        #expect(await bed.answer("0A 0300") == [0x0B] + Array("C0:00:00:00:00:01".utf8))
        // Read Blob cuts the served value at the offset.
        #expect(await bed.answer("0C 0300 1000") == hex("0D 31"))
        let other = CaptureLink("C0:00:00:00:00:02")
        bed.connect(other)
        #expect(await bed.answer("0A 0300", on: other) == hex("01 0A 0300 80"))
    }

    @Test func writeHandlerDecides() async {
        let writes = Writes()
        let bed = ServerBed(Self.database(writes: writes))
        #expect(await bed.answer("12 0500 01") == hex("13"))
        #expect(await bed.answer("12 0500 02") == hex("01 12 0500 81"))
        #expect(writes.values.withLock { $0 } == [[0x01], [0x02]])
    }

    /// A request that comes while a handler answers the one before waits for it (3.3.2).
    @Test func secondRequestWaitsForTheFirstAnswer() async {
        let writes = Writes()
        let bed = ServerBed(Self.database(writes: writes))
        bed.queue.sync {
            bed.server.receive(hex("0A 0300"), on: bed.link)
            bed.server.receive(hex("0A 0700"), on: bed.link)
        }
        #expect(await bed.link.next() == [0x0B] + Array("C0:00:00:00:00:01".utf8))
        #expect(await bed.link.next() == hex("01 0A 0700 08"))
    }

    /// A client that sends more requests while one is answered gets the first two answered
    /// in order; the third is dropped and counted (the queue behind a handler holds one).
    @Test func requestsBehindAHandlerAreBounded() async {
        let bed = ServerBed(Self.database(writes: Writes()))
        bed.queue.sync {
            bed.server.receive(hex("0A 0300"), on: bed.link)
            bed.server.receive(hex("0A 0700"), on: bed.link)
            bed.server.receive(hex("0A 0700"), on: bed.link)
        }
        #expect(await bed.link.next() == [0x0B] + Array("C0:00:00:00:00:01".utf8))
        #expect(await bed.link.next() == hex("01 0A 0700 08"))
        #expect(await bed.server.droppedCount() == 1)
        #expect(bed.link.drain().isEmpty)
    }

    /// Read By Type of a served value answers it alone (Read Using Characteristic UUID).
    @Test func readByTypeOfAServedValue() async {
        let bed = ServerBed(Self.database(writes: Writes()))
        #expect(await bed.answer("08 0100 FFFF F1FF") == [0x09, 0x13, 0x03, 0x00] + Array("C0:00:00:00:00:01".utf8))
    }

    /// Insufficient Authorization (0x08) until the server's decision allows the peer.
    @Test func authorization() async {
        let writes = Writes()
        let bed = ServerBed(Self.database(writes: writes))
        #expect(bed.request("0A 0700") == hex("01 0A 0700 08"))
        await bed.server.setAuthorization { $0.peer == "C0:00:00:00:00:01" }
        #expect(bed.request("0A 0700") == hex("0B 2A"))
    }
}

/// The values a write handler was given.
final class Writes: Sendable {
    let values = Mutex<[[UInt8]]>([])
}

/// Write Commands to a handler that has not answered: at most 8 per link run; the rest of a
/// flood is dropped and counted instead of queued without bound.
struct CommandFloodTests {
    @Test func writeCommandsBehindAHandlerAreBounded() async throws {
        let gate = Gate()
        let db = GATTDatabase(services: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.writeWithoutResponse], onWrite: { _, _ in
                    await gate.wait()
                    return nil
                }),
            ]),
        ], includesGATTService: false)
        let bed = ServerBed(db)
        bed.queue.sync { for _ in 0..<10 { bed.server.receive(hex("52 0300 01"), on: bed.link) } }
        #expect(await bed.server.droppedCount() == 2)
        try await bounded { await gate.waitForWaiters(8) }
        gate.openAll()
        #expect(await bed.server.waitUntil("the handlers ended") { $0.links.values.allSatisfy { $0.commandsRunning == 0 } })
        #expect(bed.link.drain().isEmpty)
    }
}

/// Holds handlers until the test opens it, and tells when a number of them wait.
final class Gate: Sendable {
    private let state = Mutex<(waiting: [CheckedContinuation<Void, Never>], watcher: (count: Int, continuation: CheckedContinuation<Void, Never>)?)>(([], nil))

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.waiting.append(c)
                guard let w = s.watcher, s.waiting.count >= w.count else { return nil }
                s.watcher = nil
                return w.continuation
            }
            ready?.resume()
        }
    }

    func waitForWaiters(_ n: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.waiting.count >= n { return true }
                s.watcher = (n, c)
                return false
            }
            if now { c.resume() }
        }
    }

    func openAll() {
        for c in state.withLock({ s in defer { s.waiting = [] }; return s.waiting }) { c.resume() }
    }
}
