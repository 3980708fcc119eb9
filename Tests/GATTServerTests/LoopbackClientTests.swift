import Testing
import BLETestSupport
import GATTServer
import BLEWire
import BLECore
import GATTClient

/// Our GATT client against the server over the in-process loopback.
struct LoopbackClientTests {
    static let service = ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0xFFF0))
    static let long = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0xFFF1), service: service)
    static let served = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0xFFF2), service: service)
    static let counter = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0xFFF3), service: service)
    static let indicated = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0xFFF4), service: service)

    static let database = GATTDatabase(services: [
        .init(uuid: service.uuid, characteristics: [
            .init(uuid: long.uuid, properties: [.read, .write], value: (0..<300).map { UInt8(truncatingIfNeeded: $0) }),
            .init(uuid: served.uuid, properties: [.read], onRead: { _ in .value(Array("served".utf8)) }),
            .init(uuid: counter.uuid, properties: [.notify]),
            .init(uuid: indicated.uuid, properties: [.indicate]),
        ]),
    ], deviceName: "Loopback")

    static func bed() -> (GATTServer, Peripheral) {
        let executor = AdapterExecutor(label: "gatt-server-loopback")
        let server = GATTServer(database: database, queue: executor.queue)
        let channel = LoopbackATTChannel(server: server, executor: executor)
        return (server, Peripheral(channel: channel, clientMTU: 23))
    }

    @Test func discoveryLongReadsAndWritesAndMultipleVariable() async throws {
        let (_, peripheral) = Self.bed()
        try await bounded {
            let services = try await peripheral.services()
            #expect(services.map(\.uuid).contains(Self.service.uuid))
            #expect(try await peripheral.read(Self.long) == (0..<300).map { UInt8(truncatingIfNeeded: $0) })
            let written = (0..<200).map { UInt8(truncatingIfNeeded: 255 - $0) }
            try await peripheral.writeLong(written, to: Self.long)
            #expect(try await peripheral.read(Self.long) == written)
            // Read Multiple Variable Length at ATT_MTU 23: the served value whole, the long one
            // cut to what is left of the response (22 - 2 - 6 - 2 = 12 octets).
            let both = try await peripheral.read([Self.served, Self.long])
            #expect(both == [Array("served".utf8), Array(written.prefix(12))])
            #expect(try await peripheral.read(Self.served) == Array("served".utf8))
        }
    }

    @Test func notificationsAndIndications() async throws {
        let (server, peripheral) = Self.bed()
        try await bounded {
            let values = try await peripheral.subscribe(to: Self.counter)
            let indications = try await peripheral.subscribe(to: Self.indicated, indications: true)
            #expect(await server.waitUntil("subscribed") { $0.links.values.contains { Set($0.cccd.values) == [1, 2] } })
            #expect(await server.notify(characteristic: Self.counter.uuid, value: [1, 2]) == 1)
            var iterator = values.makeAsyncIterator()
            #expect(try await iterator.next() == [1, 2])
            #expect(await server.indicate(characteristic: Self.indicated.uuid, value: [3]) == 1)
            var indicationIterator = indications.makeAsyncIterator()
            #expect(try await indicationIterator.next() == [3])
        }
    }
}
