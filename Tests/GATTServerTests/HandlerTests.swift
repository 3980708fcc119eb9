import Testing
import Synchronization
import BLETestSupport
import GATTServer

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
