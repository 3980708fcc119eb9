import Testing
import BLETestSupport
import GATTServer
import BLEWire
import ATT

/// Notifications and indications (Vol 3, Part F, 3.4.7), byte for byte.
struct NotificationPDUTests {
    static let level = BluetoothUUID(uuid16: 0x2A19)

    /// 3.4.7.1: a notification goes to the links that enabled it, cut to ATT_MTU - 3.
    @Test func notificationGoesToSubscribers() async {
        let bed = ServerBed()
        let other = CaptureLink("C0:00:00:00:00:02")
        bed.connect(other)
        #expect(bed.request("12 0A00 0100") == hex("13"))
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x63]) == 1)
        #expect(bed.link.drain() == [hex("1B 0900 63")])
        #expect(other.drain().isEmpty)
        // The stored value follows.
        #expect(bed.request("0A 0900") == hex("0B 63"))
        #expect(await bed.server.notify(characteristic: Self.level, value: [UInt8](repeating: 7, count: 30)) == 1)
        #expect(bed.link.drain() == [hex("1B 0900") + [UInt8](repeating: 7, count: 20)])
    }

    /// A link whose send queue is full gets notifications held in the server, up to the
    /// limit; beyond, they are dropped and counted; room sends the held ones in order.
    @Test func fullLinkHoldsThenDropsAndCounts() async {
        let bed = ServerBed(notificationQueueLimit: 2)
        let other = CaptureLink("C0:00:00:00:00:02")
        bed.connect(other)
        #expect(bed.request("12 0A00 0100") == hex("13"))
        #expect(bed.request("12 0A00 0100", on: other) == hex("13"))
        other.canSend = false
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x50]) == 2)
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x51]) == 2)
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x52]) == 1)
        #expect(bed.link.drain() == [hex("1B 0900 50"), hex("1B 0900 51"), hex("1B 0900 52")])
        #expect(other.drain().isEmpty)
        var stats = await bed.server.notificationStatistics()
        #expect(stats.sent == 3 && stats.dropped == 1)
        #expect(stats.links == [.init(peer: "C0:00:00:00:00:01", sent: 3, queued: 0, dropped: 0),
                                .init(peer: "C0:00:00:00:00:02", sent: 0, queued: 2, dropped: 1)])
        other.makeRoom(on: bed.queue)
        #expect(await other.next() == hex("1B 0900 50"))
        #expect(await other.next() == hex("1B 0900 51"))
        stats = await bed.server.notificationStatistics()
        #expect(stats.sent == 5 && stats.dropped == 1)
    }

    /// A notify that waits: it parks on the full link until room comes, then returns
    /// what it reached; a later one whose link stays full drops at its timeout.
    @Test func waitingNotifyGetsRoomOrDropsAtItsTimeout() async throws {
        let clock = Box<ManualScheduler>()
        let bed = ServerBed(notificationQueueLimit: 1, scheduler: { q in let s = ManualScheduler(queue: q); clock.value = s; return s })
        #expect(bed.request("12 0A00 0100") == hex("13"))
        bed.link.canSend = false
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x01], waitingUpTo: .seconds(1)) == NotificationDelivery(queued: 1))
        let second = Task { await bed.server.notify(characteristic: Self.level, value: [0x02], waitingUpTo: .seconds(1)) }
        #expect(await bed.server.waitUntil("the second notification parked") { $0.links.values.contains { !$0.notifications.parked.isEmpty } })
        bed.link.makeRoom(on: bed.queue)
        #expect(try await value(of: Task { await second.value }) == NotificationDelivery(queued: 1))
        #expect(await bed.link.next() == hex("1B 0900 01"))
        #expect(await bed.link.next() == hex("1B 0900 02"))
        bed.link.canSend = false
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x03], waitingUpTo: .seconds(1)) == NotificationDelivery(queued: 1))
        let third = Task { await bed.server.notify(characteristic: Self.level, value: [0x04], waitingUpTo: .seconds(1)) }
        #expect(await bed.server.waitUntil("the fourth notification parked") { $0.links.values.contains { !$0.notifications.parked.isEmpty } })
        await clock.value?.advance(by: .milliseconds(999))
        #expect(await bed.server.notificationStatistics().dropped == 0)
        await clock.value?.advance(by: .milliseconds(1))
        #expect(try await value(of: Task { await third.value }) == NotificationDelivery(queued: 0, dropped: 1))
        #expect(await bed.server.notificationStatistics().links == [.init(peer: "C0:00:00:00:00:01", sent: 2, queued: 1, dropped: 1)])
    }

    /// A cancelled waiting notify returns at once; its link drops it.
    @Test func cancelledWaitingNotifyReturns() async throws {
        let bed = ServerBed(notificationQueueLimit: 1)
        #expect(bed.request("12 0A00 0100") == hex("13"))
        bed.link.canSend = false
        #expect(await bed.server.notify(characteristic: Self.level, value: [0x01]) == 1)
        let waiting = Task { await bed.server.notify(characteristic: Self.level, value: [0x02], waitingUpTo: .seconds(60)) }
        #expect(await bed.server.waitUntil("the notification parked") { $0.links.values.contains { !$0.notifications.parked.isEmpty } })
        waiting.cancel()
        #expect(try await value(of: Task { await waiting.value }) == NotificationDelivery(queued: 0, dropped: 1))
        bed.link.makeRoom(on: bed.queue)
        #expect(await bed.link.next() == hex("1B 0900 01"))
        #expect(await bed.server.notificationStatistics().links.first?.queued == 0)
    }

    /// 3.4.7.2/3.4.7.3: an indication waits for its confirmation.
    @Test func indicationWaitsForConfirmation() async throws {
        let bed = ServerBed()
        #expect(bed.request("12 0400 0200") == hex("13"))
        let confirmed = Task { await bed.server.sendServiceChanged(range: ATTHandleRange(start: 0x0007, end: 0xFFFF)) }
        #expect(await bed.link.next() == hex("1D 0300 0700 FFFF"))
        #expect(bed.send("1E").isEmpty)
        #expect(try await value(of: Task { await confirmed.value }) == 1)
    }

    /// 3.3.3: an indication unconfirmed for 30 s ends the bearer: the indication fails, the
    /// link is closed and nothing more is answered on it.
    @Test func unconfirmedIndicationEndsTheBearer() async throws {
        let clock = Box<ManualScheduler>()
        let bed = ServerBed(scheduler: { q in let s = ManualScheduler(queue: q); clock.value = s; return s })
        #expect(bed.request("12 0400 0200") == hex("13"))
        let confirmed = Task { await bed.server.sendServiceChanged(range: ATTHandleRange(start: 1, end: 0xFFFF)) }
        #expect(await bed.link.next() == hex("1D 0300 0100 FFFF"))
        await clock.value?.advance(by: .seconds(29))
        #expect(!bed.link.closed)
        await clock.value?.advance(by: .seconds(1))
        #expect(try await value(of: Task { await confirmed.value }) == 0)
        #expect(bed.link.closed)
        #expect(bed.send("0A 0900").isEmpty)
    }

    /// 3.4.7.4: with Multiple Handle Value Notifications enabled in Client Supported Features
    /// (bit 2), several values go in one PDU; other clients get one notification each.
    @Test func multipleHandleValueNotification() async {
        let db = GATTDatabase(services: [
            .init(uuid: BluetoothUUID(uuid16: 0x181A), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0x2A6E), properties: [.notify]),
                .init(uuid: BluetoothUUID(uuid16: 0x2A6F), properties: [.notify]),
            ]),
        ], robustCaching: true)
        // 0x0001-0x0008 Generic Attribute (0x0008 Client Supported Features); 0x000B and
        // 0x000E the values, 0x000C and 0x000F their CCCDs.
        let bed = ServerBed(db)
        let other = CaptureLink("C0:00:00:00:00:02")
        bed.connect(other)
        #expect(bed.request("12 0800 04") == hex("13"))
        #expect(bed.request("0A 0800") == hex("0B 04"))
        for link in [bed.link, other] {
            #expect(bed.request("12 0C00 0100", on: link) == hex("13"))
            #expect(bed.request("12 0F00 0100", on: link) == hex("13"))
        }
        let sent = await bed.server.notify([(BluetoothUUID(uuid16: 0x2A6E), [0x10, 0x09]), (BluetoothUUID(uuid16: 0x2A6F), [0x88, 0x13])])
        #expect(sent == 2)
        #expect(bed.link.drain() == [hex("23 0B00 0200 1009 0E00 0200 8813")])
        #expect(other.drain() == [hex("1B 0B00 1009"), hex("1B 0E00 8813")])
    }
}

/// A value set once from a closure and read after (test plumbing).
final class Box<T: Sendable>: @unchecked Sendable { // set before the first read, in the same task
    var value: T?
}
