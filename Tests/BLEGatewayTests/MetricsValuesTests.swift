import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// The metrics message reports what really happened: a link up, a broker restart (one
/// reconnect) and the messages dropped beyond the queue's bound while the broker was away.
@Suite(.serialized) struct MetricsValuesTests {
    static func object(_ m: MQTTMessage) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any]) ?? [:]
    }

    @Test func linksReconnectsAndDropsAreCounted() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#", clientID: "metrics-watcher")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { c in
            c.metricsInterval = .milliseconds(100)
            c.broker.queueCapacity = 4
            LinkAndCommandTests.holdTheSensor(&c)
        }
        let (sensor, server) = LinkAndCommandTests.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/devices/C01122334477/link")
        let before = try await watcher.next("ble/gw/metrics") { Self.object($0)["links"] as? Int == 1 }
        #expect(Self.object(before)["reconnects"] as? Int == 0)
        #expect(Self.object(before)["dropped"] as? Int == 0)

        // 20 notifications while the broker is away, into a queue of 4: at least 16 dropped.
        broker.stop()
        for v in UInt8(1)...20 {
            #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [v]) == 1)
        }
        // (The metrics messages of the outage take room in the queue too.) The gateway tries
        // the broker again after 1 s, long after the 20 reached its queue.
        try await broker.restart()
        let after = try await watcher.next("ble/gw/metrics", timeout: .seconds(30)) { m in
            let o = Self.object(m)
            return o["reconnects"] as? Int == 1 && (o["dropped"] as? Int ?? 0) >= 16
        }
        let o = Self.object(after)
        #expect(o["links"] as? Int == 1)
        #expect((o["queueDepth"] as? Int ?? .max) <= 4)
        // The metrics reported at most what the publisher has dropped by now.
        let dropped = await bed.gateway.publisher.dropped
        #expect((o["dropped"] as? Int ?? .max) <= dropped)
        await bed.stop()
        await watcher.stop()
    }
}
