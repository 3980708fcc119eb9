import BLECore
import BLEGateway
import BLETestSupport
import GATTClient
import Testing
import BLEWire
import GATTServer

/// Links and commands: the heart-rate monitor database (Battery Level 0x2A19 = 0x64, read and
/// notify) behind a simulated peripheral, a real mosquitto, and the gateway between them.
@Suite(.serialized) struct LinkAndCommandTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    static let batteryLevel = "ble/gw/devices/C01122334477/180F/2A19"

    static func sensor(_ vc: VirtualController) -> (SimulatedPeripheral, GATTServer) {
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        return (SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: server), server)
    }

    /// No scanning; one device from the config: the sensor, subscribed to Battery Level.
    static func holdTheSensor(_ c: inout GatewayConfig, _ edit: (inout GatewayConfig.Device) -> Void = { _ in }) {
        c.scan.enabled = false
        var device = GatewayConfig.Device(address: peer)
        device.subscribe = [GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180F), characteristic: BluetoothUUID(uuid16: 0x2A19))]
        edit(&device)
        c.devices = [device]
    }

    static func command(_ watcher: Watcher, _ json: String) throws {
        try watcher.client.publish(MQTTMessage(topic: "ble/gw/commands", text: json, qos: .atLeastOnce))
    }

    @Test func commandsAreAnsweredWithTheirCorrelationID() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { $0.scan.enabled = false }
        let (sensor, _) = Self.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/status") { $0.text == "online" }

        try Self.command(watcher, #"{"id":"r0","command":"read","address":"C0:11:22:33:44:77","service":"180F","characteristic":"2A19"}"#)
        let notConnected = try await watcher.next("ble/gw/responses/r0")
        #expect(notConnected.text.hasPrefix(#"{"id":"r0","command":"read","ok":false,"error":{"code":"notConnected","message":"no link to "#))
        #expect(notConnected.qos == .atLeastOnce)

        try Self.command(watcher, #"{"id":"c1","command":"connect","address":"C0:11:22:33:44:77"}"#)
        #expect(try await watcher.next("ble/gw/responses/c1").text == #"{"id":"c1","command":"connect","ok":true,"address":"C0:11:22:33:44:77"}"#)

        try Self.command(watcher, #"{"id":"r1","command":"read","address":"C0:11:22:33:44:77","service":"180F","characteristic":"2A19"}"#)
        #expect(try await watcher.next("ble/gw/responses/r1").text == #"{"id":"r1","command":"read","ok":true,"value":"64"}"#)

        try Self.command(watcher, #"{"id":"w1","command":"write","address":"C0:11:22:33:44:77","service":"180D","characteristic":"2A39","value":"02"}"#)
        let refused = try await watcher.next("ble/gw/responses/w1")
        #expect(refused.text.hasPrefix(#"{"id":"w1","command":"write","ok":false,"error":{"code":"gatt","message":"#), "\(refused.text)")

        try Self.command(watcher, #"{"id":"bad","command":"fly","address":"C0:11:22:33:44:77"}"#)
        #expect(try await watcher.next("ble/gw/responses/bad").text ==
                #"{"id":"bad","ok":false,"error":{"code":"unknownCommand","message":"\"fly\" is not one of connect, disconnect, read, write, subscribe, unsubscribe, scan"}}"#)

        try Self.command(watcher, #"{"id":"d1","command":"disconnect","address":"C0:11:22:33:44:77"}"#)
        #expect(try await watcher.next("ble/gw/responses/d1").text == #"{"id":"d1","command":"disconnect","ok":true,"address":"C0:11:22:33:44:77"}"#)
        await bed.stop()
        await watcher.stop()
    }

    @Test func aSubscribedCharacteristicNotifiesOnItsTopic() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { c in
            Self.holdTheSensor(&c)
        }
        let (sensor, server) = Self.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        let link = try await watcher.next("ble/gw/devices/C01122334477/link")
        #expect(link.text == #"{"state":"connected"}"#)
        // The CCCD was written with notifications on (0x0001, Vol 3, Part G, 3.3.3.3).
        #expect(await server.clientConfigurations(of: BluetoothUUID(uuid16: 0x2A19)).last == 0x0001)
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x55]) == 1)
        let value = try await watcher.next(Self.batteryLevel)
        #expect(value.text == #"{"value":"55"}"#)
        #expect(value.qos == .atLeastOnce)
        await bed.stop()
        await watcher.stop()
    }

    @Test func aDeviceThatFlapsKeepsNotifying() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { c in
            Self.holdTheSensor(&c) { $0.reconnect.initialDelay = .milliseconds(50) }
        }
        let (sensor, server) = Self.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/devices/C01122334477/link")
        for round in 1...3 {
            // The peer drops the link (Connection Timeout, 0x08); the stack reconnects and
            // writes the Battery Level CCCD (handle 0x0017 in this database) again with
            // notifications on: ATT Write Request 0x12 (Vol 3, Part F, 3.4.5.1), value 0x0001.
            try bed.vc.disconnect(Self.peer, reason: HCIStatus(rawValue: 0x08))
            try await bed.vc.waitUntil("CCCD written again after drop \(round)", timeout: .seconds(10)) { vc in
                vc.l2capReceived.filter { $0.channelID == 0x0004 && $0.payload == [0x12, 0x17, 0x00, 0x01, 0x00] }.count >= round + 1
            }
            try await bed.vc.waitUntil("the write answered") { vc in
                vc.l2capSent.filter { $0.channelID == 0x0004 && $0.payload.first == 0x13 }.count >= round + 1
            }
            let n = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x40 + UInt8(round)])
            #expect(n == 1)
            _ = try await watcher.next(Self.batteryLevel) { $0.text == #"{"value":"4\#(round)"}"# }
        }
        await bed.stop()
        await watcher.stop()
    }

    @Test func aBrokerRestartLosesNothingInsideTheQueue() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#", clientID: "restart-watcher")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { c in
            c.broker.queueCapacity = 100
            Self.holdTheSensor(&c)
        }
        let (sensor, server) = Self.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/devices/C01122334477/link")
        // 1...10 with the broker up, 11...40 while it is down, 41...50 after it is back.
        for v in UInt8(1)...10 { _ = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [v]) }
        _ = try await watcher.next(Self.batteryLevel) { $0.text == #"{"value":"0A"}"# }
        broker.stop()
        for v in UInt8(11)...40 { _ = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [v]) }
        try await broker.restart()
        for v in UInt8(41)...50 { _ = await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [v]) }
        _ = try await watcher.next(Self.batteryLevel, timeout: .seconds(30)) { $0.text == #"{"value":"32"}"# }
        // Every value arrived at least once (QoS 1 may repeat one that was in flight).
        let seen = Set(await watcher.on(Self.batteryLevel).map(\.text))
        let hex = { (v: Int) -> String in let s = String(v, radix: 16, uppercase: true); return s.count == 1 ? "0" + s : s }
        let missing = (1...50).filter { !seen.contains(#"{"value":""# + hex($0) + #""}"#) }
        #expect(missing.isEmpty, "values lost across the restart: \(missing)")
        #expect(await bed.gateway.publisher.reconnects >= 1)
        #expect(await bed.gateway.publisher.dropped == 0)
        await bed.stop()
        await watcher.stop()
    }
}
