import Testing
import BLECore
import BLETestSupport
import GATTServer
import BLEWire

/// Notifications to several peripheral-role links of the in-process virtual controller, one of
/// which stops acknowledging (its Number Of Completed Packets withheld): the fast links get
/// every notification, the slow one what its bounded queues hold and no more, with the rest
/// counted as dropped; once it acknowledges again it gets exactly what was held, in order.
/// Handles as in `ServeConnectionTests`: Battery Level value 0x0003, its CCCD 0x0004.
/// PDUs: Vol 3, Part F, 3.4.5.1 (Write Request), 3.4.7.1 (Handle Value Notification).
@Suite(.timeLimit(.minutes(1)))
struct NotificationFlowControlTests {
    static let centrals = (1...3).map { LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_00 + UInt64($0)), type: .random) }
    static let level = BluetoothUUID(uuid16: 0x2A19)

    @Test func aSlowLinkHoldsAndDropsWhileTheFastOnesGetEverything() async throws {
        let vc = VirtualController(options: VirtualController.Options())
        let central = try await vc.poweredOnCentral()
        // A small link queue: half of it (4 PDUs) is what the server lets notifications take.
        await central.host.setACLLimits(linkQueuePDUs: 8)
        let server = GATTServer(database: ServeConnectionTests.database, queue: central.executor.queue, notificationQueueLimit: 4)
        var incoming = await central.incomingConnections().makeAsyncIterator()
        var connected: [UInt16] = []
        for (n, peer) in Self.centrals.enumerated() {
            _ = try await central.startAdvertising(AdvertisingData([.completeLocalName("serve")]))
            connected.append(try vc.connectFromCentral(peer))
            try await server.serve(try #require(await incoming.next()))
            try vc.sendL2CAP(from: peer, channelID: L2CAPChannelID.att, payload: [0x12, 0x04, 0x00, 0x01, 0x00])
            #expect(try await vc.waitForL2CAP(channelID: L2CAPChannelID.att, count: n + 1).payload == [0x13])
        }
        let handles = connected
        let slow = Self.centrals[0]
        try vc.holdCompletedPackets(of: slow)
        let count = 40
        for n in 1...count { await server.notify(characteristic: Self.level, value: [UInt8(n)]) }

        @Sendable func notifications(_ handle: UInt16) -> [[UInt8]] {
            vc.l2capReceived.filter { $0.handle == handle && $0.channelID == L2CAPChannelID.att && $0.payload.first == 0x1B }.map { Array($0.payload) }
        }
        let every = (1...count).map { [0x1B, 0x03, 0x00, UInt8($0)] }
        try await vc.waitUntil("every notification on the fast links") { _ in
            notifications(handles[1]).count == count && notifications(handles[2]).count == count
        }
        #expect(notifications(handles[1]) == every)
        #expect(notifications(handles[2]) == every)

        let stats = await server.notificationStatistics()
        let slowStats = try #require(stats.links.first { $0.peer == "\(slow.address)" })
        #expect(slowStats.queued == 4)
        #expect(slowStats.dropped > 0)
        #expect(slowStats.sent + slowStats.queued + slowStats.dropped == count)
        #expect(stats.links.filter { $0.peer != "\(slow.address)" }.allSatisfy { $0.sent == count && $0.dropped == 0 && $0.queued == 0 })
        #expect(stats.sent == 2 * count + slowStats.sent && stats.dropped == slowStats.dropped)
        // The slow link never got more than what was handed to its controller buffers.
        #expect(notifications(handles[0]).count <= slowStats.sent)

        // It acknowledges again: what was sent and held arrives, oldest first, and nothing after.
        try vc.holdCompletedPackets(of: slow, false)
        let kept = slowStats.sent + slowStats.queued
        try await vc.waitUntil("the slow link's held notifications") { _ in notifications(handles[0]).count == kept }
        #expect(notifications(handles[0]) == Array(every.prefix(kept)))
        #expect(await server.notificationStatistics().links.first { $0.peer == "\(slow.address)" }?.queued == 0)
    }
}
