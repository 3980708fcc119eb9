import Testing
import GATTServer
import BLEWire

/// The direct path of Read Requests (a stored value any link may read), byte for byte against
/// Vol 3, Part F, 3.4.4.3-3.4.4.4: the same answers as the general path, a response buffer
/// reused without touching what a link kept, and every case that needs more than a stored
/// value (CCCDs, security, handlers, change-unaware clients) still answered as before.
struct DirectReadTests {
    /// Handles: 0x0001-0x0003 a service with one characteristic of 30 octets (0x0003, read
    /// and write), 0x0004-0x0005 one served by a handler (0x0005).
    static let database = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read, .write], value: Array(0x00..<0x1E), maximumLength: 40),
            .init(uuid: BluetoothUUID(uuid16: 0xFFF2), properties: [.read], onRead: { _ in .value([0xAB]) }),
        ]),
    ], includesGATTService: false)

    /// Each answer is its own array: the one a link kept is not changed by the next answer.
    @Test func answersKeptByTheLinkStayAsSent() {
        let bed = ServerBed()
        bed.queue.sync {
            bed.server.receive(hex("0A 0900"), on: bed.link)
            bed.server.receive(hex("0A 0E00"), on: bed.link)
            bed.server.receive(hex("0A 0700"), on: bed.link)
        }
        // Battery Level 0x64; "abc"; the Battery service declaration (0x180F).
        #expect(bed.link.drain() == [hex("0B 64"), hex("0B 616263"), hex("0B 0F18")])
    }

    /// Read Response carries the first ATT_MTU - 1 octets (3.4.4.4): 22 at the default
    /// ATT_MTU of 23, all 30 after Exchange MTU to 64.
    @Test func aLongValueIsCutToTheMTU() {
        let bed = ServerBed(Self.database)
        #expect(bed.request("0A 0300") == [0x0B] + Array(0x00..<0x16))
        #expect(bed.request("02 4000") == hex("03 0502"))
        #expect(bed.request("0A 0300") == [0x0B] + Array(0x00..<0x1E))
    }

    /// A written value is what the next read returns, and a read reaches activity subscribers.
    @Test func aWriteIsReadBackAndReported() async {
        let bed = ServerBed(Self.database)
        let activity = await bed.server.activity()
        #expect(bed.request("12 0300 0102") == hex("13"))
        #expect(bed.request("0A 0300") == hex("0B 0102"))
        var events: [GATTServerActivity] = []
        for await event in activity {
            events.append(event)
            if events.count == 2 { break }
        }
        let peer = bed.link.centralDescription
        #expect(events == [
            .wrote(peer: peer, handle: 0x0003, uuid: BluetoothUUID(uuid16: 0xFFF1), value: [0x01, 0x02]),
            .read(peer: peer, handle: 0x0003, uuid: BluetoothUUID(uuid16: 0xFFF1), offset: 0, value: [0x01, 0x02]),
        ])
    }

    /// Values that are not the same stored octets for every link take the general path:
    /// a handler's value, an unknown handle, a malformed request.
    @Test func otherReadsTakeTheGeneralPath() async {
        let bed = ServerBed(Self.database)
        #expect(await bed.answer("0A 0500") == hex("0B AB"))
        #expect(bed.request("0A 0600") == hex("01 0A 0600 01"))
        #expect(bed.request("0A 0300 00") == hex("01 0A 0000 04"))
    }
}
