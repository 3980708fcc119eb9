import Foundation
import Testing
import BLECore
import BLETestSupport
import GATTServer
import BLEWire

/// Our GATT server on a peripheral-role link, with Bumble's GATT client as the independent
/// central (Fixtures/peers/gatt_central.py, scenario "procedures"): every answer is checked in
/// the bytes or values Bumble received. PDU layouts: Core Spec 5.4, Vol 3, Part F, 3.4.
@Suite("GATT server against a Bumble central", .timeLimit(.minutes(2)))
struct PeripheralGATTRadioTests {
    static let long = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1")!
    static let command = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF2")!
    static let counter = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF3")!
    static let level = BluetoothUUID(uuid16: 0x2A19)
    static let longValue = Array(String(repeating: "0123456789", count: 10).utf8)

    /// The database gatt_central.py expects (its docstring).
    static let database = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [.init(uuid: level, properties: [.read, .notify], value: [0x64])]),
        .init(uuid: BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!, characteristics: [
            .init(uuid: long, properties: [.read, .write], value: longValue),
            .init(uuid: command, properties: [.read, .writeWithoutResponse]),
            .init(uuid: counter, properties: [.read, .indicate], value: [0x00]),
        ]),
    ])

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("Discovery, long read and write, Write Command, Read Multiple, notification, indication, bad PDUs, a prepare flood; scanning while serving")
    func bumbleRunsEveryProcedure() async throws {
        let peer = try await GATTCentralPeer(scenario: "procedures")
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
        let server = GATTServer(database: Self.database, queue: central.executor.queue)
        let activity = await server.activity()
        let links = await central.incomingConnections()
        let serving = Task { for await link in links { try await server.serve(link) } }
        defer { serving.cancel() }
        // Both roles at once: our scan runs while we advertise, and while the link is up and served
        // (Bumble advertises "bumble-adv" once connected).
        let scan = Task { () -> LEAddress? in
            for try await event in await central.scan() {
                if case .discovered(let p) = event, p.name == "bumble-adv" { return p.address }
            }
            return nil
        }
        let set = try await central.startAdvertising(AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeLocalName("gatt-server")]),
                                                     parameters: AdvertisingParameters(resumeAfterDisconnect: true))
        var events = await set.events().makeAsyncIterator()
        _ = try await GATTCentralPeer.next("connected", in: &lines)
        #expect(try await GATTCentralPeer.next("mtu", in: &lines) as? Int == 64)
        let characteristics = try await GATTCentralPeer.next("characteristics", in: &lines)
        let longHandle = try #require(GATTCentralPeer.handle(of: Self.long.description, in: characteristics))
        let levelHandle = try #require(GATTCentralPeer.handle(of: "2A19", in: characteristics))
        #expect(GATTCentralPeer.handle(of: Self.counter.description, in: characteristics) != nil)
        // A long read: Read, then Read Blob from offset 63 (ATT_MTU 64 - 1).
        let read = try await GATTCentralPeer.next("read", in: &lines) as? [String: Any]
        #expect(read?["value"] as? String == Self.hex(Self.longValue))
        // A long write of 150 octets through Prepare Write / Execute Write, read back.
        let written = (0..<150).map { UInt8(truncatingIfNeeded: $0 * 7) }
        #expect((try await GATTCentralPeer.next("long_write", in: &lines) as? [String: Any])?["value"] as? String == Self.hex(written))
        #expect(await server.value(of: Self.long) == written)
        // Write Command, read back.
        #expect((try await GATTCentralPeer.next("command", in: &lines) as? [String: Any])?["value"] as? String == "636d64")
        // Read Multiple Response (3.4.4.8): 0x0F, then the values: 0x64 and "cmd".
        #expect(try await GATTCentralPeer.next("read_multiple", in: &lines) as? String == "0f64636d64")
        #expect(try await GATTCentralPeer.next("subscribed", in: &lines) as? Bool == true)
        #expect(await server.notify(characteristic: Self.level, value: [0x55]) == 1)
        // The indication counts only once Bumble's Handle Value Confirmation arrived.
        #expect(await server.indicate(characteristic: Self.counter, value: [0x01]) == 1)
        #expect((try await GATTCentralPeer.next("notification", in: &lines) as? [String: Any])?["value"] as? String == "55")
        #expect((try await GATTCentralPeer.next("indication", in: &lines) as? [String: Any])?["value"] as? String == "01")
        // Error Response (3.4.1.1): 0x01, request opcode, handle (LE), error code.
        let h = Self.hex([UInt8(longHandle & 0xFF), UInt8(longHandle >> 8)])
        let expected = [
            "truncated": "010a000004",          // Read Request without its handle: Invalid PDU
            "unknown": "013f000006",            // opcode 0x3F: Request Not Supported
            "past_mtu": "0112000004",           // 73 octets over ATT_MTU 64: Invalid PDU (3.2.8)
            "past_server_mtu": "0112000004",    // 603 octets, refused by the host at its first fragment
            "blob_offset": "010c" + h + "07",   // Read Blob at 200 of 150 octets: Invalid Offset
        ]
        for _ in expected {
            let raw = try #require(try await GATTCentralPeer.next("raw", in: &lines) as? [String: Any])
            let name = try #require(raw["name"] as? String)
            #expect(raw["answer"] as? String == expected[name], "\(name)")
        }
        // 64 Prepare Writes are echoed (3.4.6.2); the 65th gets Prepare Queue Full (0x09);
        // Execute Write with flags 0x00 cancels them all (Execute Write Response, 0x19).
        let flood = try #require(try await GATTCentralPeer.next("flood", in: &lines) as? [String: Any])
        #expect(flood["echoes"] as? Int == 64)
        #expect(flood["full"] as? String == "0116" + h + "09")
        #expect(flood["cancel"] as? String == "19")
        #expect((try await GATTCentralPeer.next("after_flood", in: &lines) as? [String: Any])?["value"] as? String == Self.hex(written))
        let seen = try await scan.value
        #expect(seen == LEAddress(BluetoothAddress(GATTCentralPeer.centralAddress)!, type: .random))
        // Bumble disconnects; our set advertises again and Bumble sees it.
        _ = try await GATTCentralPeer.next("disconnected", in: &lines)
        guard case .connected? = await events.next(), case .resumed? = await events.next() else {
            Issue.record("advertising did not resume after the link"); return
        }
        _ = try await GATTCentralPeer.next("done", in: &lines)
        await central.close()
        // What the server reported, in order of the writes and subscriptions.
        var reported: [GATTServerActivity] = []
        for await event in activity {
            if case .disconnected = event { break }
            if case .wrote = event { reported.append(event) }
            if case .subscribed = event { reported.append(event) }
        }
        let from = GATTCentralPeer.centralAddress
        #expect(reported == [
            .wrote(peer: from, handle: UInt16(longHandle), uuid: Self.long, value: written),
            .wrote(peer: from, handle: UInt16(longHandle + 2), uuid: Self.command, value: Array("cmd".utf8)),
            .subscribed(peer: from, characteristic: Self.level, valueHandle: UInt16(levelHandle), configuration: 0x0001),
            .subscribed(peer: from, characteristic: Self.counter, valueHandle: UInt16(longHandle + 4), configuration: 0x0002),
        ])
    }

    @Test("EATT: Bumble opens two enhanced bearers beside the unenhanced one; each answers by its own ATT_MTU, all three at once; a CCCD written on an enhanced bearer brings the notification on the unenhanced one")
    func bumbleOpensEnhancedBearers() async throws {
        let peer = try await GATTCentralPeer(scenario: "eatt")
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
        let server = GATTServer(database: Self.database, queue: central.executor.queue)
        let links = await central.incomingConnections()
        let serving = Task { for await link in links { try await server.serve(link) } }
        defer { serving.cancel() }
        _ = try await central.startAdvertising(AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeLocalName("gatt-server")]))
        _ = try await GATTCentralPeer.next("connected", in: &lines)
        #expect(try await GATTCentralPeer.next("mtu", in: &lines) as? Int == 64)
        #expect((try await GATTCentralPeer.next("eatt", in: &lines) as? [String: Any])?["bearers"] as? Int == 2)
        // Read Response (Vol 3, Part F, 3.4.4.4): 0x0B and the value cut to ATT_MTU - 1: 63 octets
        // on the unenhanced bearer (MTU 64 exchanged), 79 on the enhanced one whose L2CAP MTU
        // is 80, all 100 on the one of 160 (an enhanced bearer's ATT_MTU is the smaller L2CAP
        // MTU, Part F, 3.2.8).
        let reads = try await GATTCentralPeer.next("eatt_reads", in: &lines) as? [String]
        #expect(reads == [63, 79, 100].map { "0b" + Self.hex(Array(Self.longValue.prefix($0))) })
        // Write Response (3.4.5.2), then a notification that goes to the client's unenhanced bearer.
        #expect(try await GATTCentralPeer.next("eatt_subscribed", in: &lines) as? String == "13")
        #expect(await server.notify(characteristic: Self.level, value: [0x42]) == 1)
        #expect((try await GATTCentralPeer.next("eatt_notification", in: &lines) as? [String: Any])?["value"] as? String == "42")
        _ = try await GATTCentralPeer.next("done", in: &lines)
        await central.close()
    }
}
