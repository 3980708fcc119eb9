import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Synchronization
import Testing
import BLEWire
import BLETransport
import GATTServer

/// The gateway's adapter goes away (the virtual controller closes its end of the link, as an
/// unplugged dongle does; opening fails as the kernel's ENODEV does) and comes back: the loss
/// and the reopen are published, advertisements and the configured link's notifications
/// resume, all through a real mosquitto.
@Suite(.serialized) struct AdapterLossTests {
    /// The adapter's plug: while out, opening fails with `.noSuchAdapter`.
    final class Plug: Sendable {
        let vc: VirtualController
        let present = Atomic<Bool>(true)
        init(_ vc: VirtualController) { self.vc = vc }

        func open() throws(TransportError) -> any HCITransport {
            guard present.load(ordering: .relaxed) else { throw .noSuchAdapter(index: 0, available: []) }
            return vc.makeTransport()
        }

        func unplug() {
            present.store(false, ordering: .relaxed)
            vc.closeTransport()
        }
    }

    static func object(_ m: MQTTMessage) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any] ?? [:]
    }

    /// A gateway on a reopenable central over the virtual controller (immediate time), holding
    /// a link to the heart-rate sensor with Battery Level subscribed, metrics every 200 ms.
    /// The reopen backoff is far longer than a test: only `appear` starts an attempt early.
    struct Rig {
        let vc: VirtualController
        let plug: Plug
        let server: GATTServer
        let central: Central
        let task: Task<Void, any Error>
        let appear: AsyncStream<Void>.Continuation

        init(_ broker: Broker) async throws {
            var options = VirtualController.Options()
            options.time = .immediate
            vc = VirtualController(options: options)
            let (sensor, server) = LinkAndCommandTests.sensor(vc)
            self.server = server
            vc.addPeripheral(sensor)
            let plug = Plug(vc)
            self.plug = plug
            central = Central(opening: { () throws(TransportError) in try plug.open() }, name: "virtual", options: vc.centralOptions())
            try await central.powerOn()
            let (appearances, appear) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            self.appear = appear
            let policy = AdapterReopenPolicy(backoff: .exponential(initial: .seconds(60), jitter: 0), appearances: { _ in appearances })
            var config = GatewayConfig()
            config.broker.url = broker.url
            config.id = GatewayBed.id
            config.metricsInterval = .milliseconds(200)
            var device = GatewayConfig.Device(address: LinkAndCommandTests.peer)
            device.subscribe = [GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180F), characteristic: BluetoothUUID(uuid16: 0x2A19))]
            device.reconnect.initialDelay = .seconds(60)
            config.devices = [device]
            let gateway = try Gateway(central: central, config: config, adapterReopen: policy)
            task = Task { try await gateway.run() }
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
            await central.close()
        }
    }

    @Test func theGatewayReopensItsAdapterAndResumes() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let rig = try await Rig(broker)
        let (plug, server, appear) = (rig.plug, rig.server, rig.appear)
        let advertisement = "ble/gw/devices/C01122334477"
        let link = "ble/gw/devices/C01122334477/link"
        #expect(try await watcher.next("ble/gw/adapter").text == #"{"state":"up","reopens":0}"#)
        _ = try await watcher.next(link) { $0.text == #"{"state":"connected"}"# }
        _ = try await watcher.next(advertisement)
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x51]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"51"}"# }

        await watcher.clear()
        plug.unplug()
        let lost = try await watcher.next("ble/gw/adapter")
        #expect(lost.qos == .atLeastOnce)
        #expect(Self.object(lost)["state"] as? String == "lost")
        #expect(Self.object(lost)["reopens"] as? Int == 0)
        #expect(Self.object(lost)["message"] is String)
        _ = try await watcher.next(link) { $0.text == #"{"state":"disconnected"}"# }
        let lostMetrics = try await watcher.next("ble/gw/metrics") { Self.object($0)["adapter"] as? String == "lost" }
        #expect(Self.object(lostMetrics)["adapterReopens"] as? Int == 0)
        #expect(Self.object(lostMetrics)["links"] as? Int == 0)

        await watcher.clear()
        plug.present.store(true, ordering: .relaxed)
        appear.yield()
        #expect(try await watcher.next("ble/gw/adapter").text == #"{"state":"up","reopens":1}"#)
        // The scan runs again (the peripheral advertises when it starts) and the link is made
        // again now, not after the device's 60 s backoff, with its CCCD written again.
        _ = try await watcher.next(advertisement)
        _ = try await watcher.next(link) { $0.text == #"{"state":"connected"}"# }
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x52]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"52"}"# }
        // Metrics go out every 200 ms: one published between the reopen and the new link
        // still counts no link, so the first with the link is taken.
        let upMetrics = try await watcher.next("ble/gw/metrics") { Self.object($0)["adapterReopens"] as? Int == 1 && Self.object($0)["links"] as? Int == 1 }
        #expect(Self.object(upMetrics)["adapter"] as? String == "up")

        // Retained: a late subscriber learns the adapter's state at once (the broker sets the
        // retain flag only on messages sent for a new subscription, MQTT 3.1.1, 3.3.1.3).
        let late = try await Watcher.start(broker, "ble/gw/adapter")
        let retained = try await late.next("ble/gw/adapter")
        #expect(retained.retain)
        #expect(retained.text == #"{"state":"up","reopens":1}"#)
        await late.stop()
        await rig.stop()
        await watcher.stop()
    }

    /// What the controller says when it lost its state while the transport stays: the
    /// HCI_Hardware_Error event (Vol 4, Part E, 7.7.16: code 0x10, length 1, Hardware_Code
    /// 0x01), and a Command Complete for an HCI_Reset another program sent (7.7.14, opcode
    /// 0x0C03, status 0x00), with the words each loss is published with.
    static let controllerLosses: [(event: HCIEventPacket, message: String)] = [
        (HCIEventPacket(code: 0x10, parameters: [0x01]), "Hardware Error 0x01"),
        (HCIEventPacket(code: 0x0E, parameters: [0x01, 0x03, 0x0C, 0x00]), "HCI_Reset (0x0C03) that this host did not send"),
    ]

    @Test(arguments: controllerLosses)
    func aControllerThatLostItsStateIsALossTooAndTheLinkComesBack(_ loss: (event: HCIEventPacket, message: String)) async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let rig = try await Rig(broker)
        let link = "ble/gw/devices/C01122334477/link"
        _ = try await watcher.next(link) { $0.text == #"{"state":"connected"}"# }
        await watcher.clear()
        rig.vc.inject(.event(loss.event))
        let lost = try await watcher.next("ble/gw/adapter")
        #expect(Self.object(lost)["state"] as? String == "lost")
        #expect((Self.object(lost)["message"] as? String)?.contains(loss.message) == true, "\(lost.text)")
        // The adapter is still there: the first attempt reopens it, no appearance needed.
        #expect(try await watcher.next("ble/gw/adapter") { Self.object($0)["state"] as? String != "lost" }.text == #"{"state":"up","reopens":1}"#)
        _ = try await watcher.next(link) { $0.text == #"{"state":"connected"}"# }
        #expect(await rig.server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x61]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"61"}"# }
        await rig.stop()
        await watcher.stop()
    }

    @Test func anAdapterThatCannotBeReopenedIsPublishedAsFailed() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        // GatewayBed's central was handed its transport open: it cannot open it again.
        let bed = try await GatewayBed(broker: broker, peripherals: []) { $0.scan.enabled = false }
        #expect(try await watcher.next("ble/gw/adapter").text == #"{"state":"up","reopens":0}"#)
        bed.vc.closeTransport()
        _ = try await watcher.next("ble/gw/adapter") { Self.object($0)["state"] as? String == "lost" }
        let failed = try await watcher.next("ble/gw/adapter") { Self.object($0)["state"] as? String == "failed" }
        #expect((Self.object(failed)["message"] as? String)?.hasPrefix("cannot reopen virtual-") == true, "\(failed.text)")
        // Still running: commands are answered.
        try watcher.client.publish(MQTTMessage(topic: "ble/gw/commands", text: #"{"id":"s1","command":"scan","enabled":false}"#, qos: .atLeastOnce))
        _ = try await watcher.next("ble/gw/responses/s1")
        let late = try await Watcher.start(broker, "ble/gw/adapter")
        let retained = try await late.next("ble/gw/adapter")
        #expect(retained.retain)
        #expect(Self.object(retained)["state"] as? String == "failed")
        await late.stop()
        await bed.stop()
        await watcher.stop()
    }
}
