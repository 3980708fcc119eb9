import Dispatch
import Testing
import BLECore
import BLETestSupport
import GATTServer
import BLEWire

/// `GATTServer.serve(_:)` on a peripheral-role link of the in-process virtual controller: a
/// remote central's ATT PDUs reach the server over the host's ACL path and the answers go
/// back on CID 0x0004. Handles follow the layout of Vol 3, Part G, 3 (no GAP or GATT service):
/// 0x0001 service 180F, 0x0002/0x0003 Battery Level declaration and value, 0x0004 its CCCD,
/// 0x0005/0x0006 0xFFF1 declaration and value. PDUs: Vol 3, Part F, 3.4.
@Suite(.timeLimit(.minutes(1)))
struct ServeConnectionTests {
    static let remoteCentral = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    static let database = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [
            .init(uuid: BluetoothUUID(uuid16: 0x2A19), properties: [.read, .notify], value: [0x64]),
            .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read, .write], permissions: [.readEncrypted, .write], value: [0x01]),
        ]),
    ], includesGATTService: false)

    /// A central connected to our advertising, and the server (`serverMTU`, `prepareQueueLimit`)
    /// on the adapter's queue, or on `queue`.
    static func bed(serverMTU: UInt16 = 517, prepareQueueLimit: Int = 64, queue: DispatchQueue? = nil) async throws -> (VirtualController, Central, Connection, GATTServer) {
        let vc = VirtualController(options: VirtualController.Options())
        let central = try await vc.poweredOnCentral()
        let link = try await vc.acceptConnection(on: central, advertising: AdvertisingData([.completeLocalName("serve")]), from: remoteCentral)
        let server = GATTServer(database: database, queue: queue ?? central.executor.queue, serverMTU: serverMTU, prepareQueueLimit: prepareQueueLimit)
        return (vc, central, link, server)
    }

    static func send(_ vc: VirtualController, _ pdu: [UInt8]) throws {
        try vc.sendL2CAP(from: remoteCentral, channelID: L2CAPChannelID.att, payload: pdu)
    }

    static func answer(_ vc: VirtualController, _ n: Int) async throws -> [UInt8] {
        Array(try await vc.waitForL2CAP(channelID: L2CAPChannelID.att, count: n).payload)
    }

    @Test func aRequestSentBeforeServeIsAnsweredAndTheLinksSecurityIsEnforced() async throws {
        let (vc, _, link, server) = try await Self.bed()
        let activity = await server.activity()
        try Self.send(vc, [0x0A, 0x03, 0x00])                                // Read Request, handle 0x0003
        try await server.serve(link)
        #expect(try await Self.answer(vc, 1) == [0x0B, 0x64])                // Read Response
        try Self.send(vc, [0x0A, 0x06, 0x00])
        // readEncrypted on an unencrypted link: Error Response, Insufficient Encryption (0x0F).
        #expect(try await Self.answer(vc, 2) == [0x01, 0x0A, 0x06, 0x00, 0x0F])
        try Self.send(vc, [0x12, 0x04, 0x00, 0x01, 0x00])                    // Write Request: CCCD = notifications
        #expect(try await Self.answer(vc, 3) == [0x13])
        try vc.disconnect(Self.remoteCentral)
        var events: [GATTServerActivity] = []
        for await event in activity {
            events.append(event)
            if case .disconnected = event { break }
        }
        let peer = "\(Self.remoteCentral.address)"
        #expect(events == [
            .connected(peer: peer),
            .read(peer: peer, handle: 0x0003, uuid: BluetoothUUID(uuid16: 0x2A19), offset: 0, value: [0x64]),
            .subscribed(peer: peer, characteristic: BluetoothUUID(uuid16: 0x2A19), valueHandle: 0x0003, configuration: 0x0001),
            .disconnected(peer: peer),
        ])
        #expect(await server.clientConfigurations(of: BluetoothUUID(uuid16: 0x2A19)) == [])
    }

    @Test func aPDULongerThanTheServersMTUIsRefusedByTheHostAndAnsweredInvalidPDU() async throws {
        let (vc, central, link, server) = try await Self.bed(serverMTU: 100)
        try await server.serve(link)
        // A Write Request of 3 + 150 octets, past the server's ATT_MTU of 100 (Part F, 3.2.8).
        try Self.send(vc, [0x12, 0x06, 0x00] + [UInt8](repeating: 0xAA, count: 150))
        #expect(try await Self.answer(vc, 1) == [0x01, 0x12, 0x00, 0x00, 0x04])
        // A Write Command that long gets no answer and is dropped; the next request is answered.
        try Self.send(vc, [0x52, 0x06, 0x00] + [UInt8](repeating: 0xBB, count: 150))
        try Self.send(vc, [0x0A, 0x03, 0x00])
        #expect(try await Self.answer(vc, 2) == [0x0B, 0x64])
        #expect(await server.droppedCount() == 1)
        // Both were refused by the host at their first fragment, never reassembled.
        #expect(await central.host.oversizedInboundPDUs == 2)
        #expect(await server.value(of: BluetoothUUID(uuid16: 0xFFF1)) == [0x01])
    }

    @Test func aPrepareQueueFloodGetsPrepareQueueFull() async throws {
        let (vc, _, link, server) = try await Self.bed(prepareQueueLimit: 2)
        try await server.serve(link)
        for offset: UInt8 in 0..<3 {
            try Self.send(vc, [0x16, 0x06, 0x00, offset, 0x00, 0x10 + offset])   // Prepare Write Request
        }
        #expect(try await Self.answer(vc, 1) == [0x17, 0x06, 0x00, 0x00, 0x00, 0x10])
        #expect(try await Self.answer(vc, 2) == [0x17, 0x06, 0x00, 0x01, 0x00, 0x11])
        #expect(try await Self.answer(vc, 3) == [0x01, 0x16, 0x06, 0x00, 0x09])  // Prepare Queue Full
        try Self.send(vc, [0x18, 0x01])                                         // Execute Write Request: write
        #expect(try await Self.answer(vc, 4) == [0x19])
        #expect(await server.value(of: BluetoothUUID(uuid16: 0xFFF1)) == [0x10, 0x11])
    }

    @Test func aServerOnAQueueOfItsOwnAnswersInOrder() async throws {
        let (vc, _, link, server) = try await Self.bed(queue: DispatchQueue(label: "server"))
        try await server.serve(link)
        try Self.send(vc, [0x0A, 0x03, 0x00])
        try Self.send(vc, [0x0A, 0x06, 0x00])
        try Self.send(vc, [0x0A, 0x03, 0x00])
        #expect(try await Self.answer(vc, 1) == [0x0B, 0x64])
        #expect(try await Self.answer(vc, 2) == [0x01, 0x0A, 0x06, 0x00, 0x0F])
        #expect(try await Self.answer(vc, 3) == [0x0B, 0x64])
    }
}
