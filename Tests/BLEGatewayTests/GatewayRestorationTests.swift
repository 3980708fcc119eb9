import BLECore
import BLEGateway
import BLETestSupport
import GATTClient
import Glibc
import Testing
import BLEWire

/// The gateway's configured links through `Restoration`, its store under the state directory:
/// the first run stores the link and its subscription (handles and Database Hash); a restarted
/// gateway gets the link back through the Filter Accept List, the restoration subscribes again
/// with no discovery, and notifications are published again. Against a real mosquitto.
@Suite(.serialized) struct GatewayRestorationTests {
    @Test func aRestartedGatewayRestoresItsLinksAndPublishesNotifications() async throws {
        let state = try CachedReconnectTests.directory()
        defer { _ = system("rm -rf '\(state)'") }
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")

        let first = try await GatewayBed(broker: broker, peripherals: [], stateDirectory: state) { c in
            LinkAndCommandTests.holdTheSensor(&c)
        }
        let (sensor, server) = LinkAndCommandTests.sensor(first.vc)
        first.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/devices/C01122334477/link") { $0.text == #"{"state":"connected"}"# }
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x36]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"36"}"# }
        await first.stop()
        // The store under the state directory: the device (random address, no security, no
        // reconnect of its own: the gateway's background connections bring it back) and its
        // subscription, Battery Level's value at 0x0016 and CCCD at 0x0017 in this database,
        // with the database's hash.
        let stored = try await RestorationStore(identifier: "links", directory: state + "/restoration").load()
        let batteryLevel = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A19), service: ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0x180F)))
        #expect(stored == [RestorableLink(peer: LinkAndCommandTests.peer, reconnect: .never, security: .none, subscriptions: [
            RestorableSubscription(characteristic: batteryLevel, valueHandle: 0x0016, cccdHandle: 0x0017,
                                   databaseHash: await server.databaseHash(), writtenEncrypted: false),
        ])])

        // The restart: the restoration has the link before it is made.
        let second = try await GatewayBed(broker: broker, peripherals: [], stateDirectory: state) { c in
            LinkAndCommandTests.holdTheSensor(&c)
        }
        #expect(try await second.gateway.restoration?.storedLinks().map(\.peer) == [LinkAndCommandTests.peer])
        let create = try await second.vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        #expect(create.parameters[4] == 0x01)
        let (again, serverAgain) = LinkAndCommandTests.sensor(second.vc)
        second.vc.addPeripheral(again)
        // The CCCD written again (ATT Write Request 0x12, handle 0x0017, 0x0001) and nothing
        // discovered (no Read By Group Type Request, 0x10).
        try await second.vc.waitUntil("CCCD written after the restart", timeout: .seconds(10)) { vc in
            CachedReconnectTests.attRequests(vc).contains(CachedReconnectTests.enableBatteryLevel)
        }
        #expect(!CachedReconnectTests.attRequests(second.vc).contains { $0.first == CachedReconnectTests.readByGroupType })
        #expect(await serverAgain.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x37]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"37"}"# }
        await second.stop()
        await watcher.stop()
    }
}
