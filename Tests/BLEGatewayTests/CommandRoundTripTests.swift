import BLECore
import BLEGateway
import BLETestSupport
import Testing
import BLEWire

/// Commands over MQTT and their effect on the peer and the topics: `subscribe` then
/// `unsubscribe` (notifications appear, then stop), `write` (the peer gets the bytes), `scan`
/// off and on (advertisements stop, then come again).
@Suite(.serialized) struct CommandRoundTripTests {
    static let peer = LinkAndCommandTests.peer
    static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)

    static func command(_ watcher: Watcher, _ json: String) throws {
        try watcher.client.publish(MQTTMessage(topic: "ble/gw/commands", text: json, qos: .atLeastOnce))
    }

    @Test func subscribeUnsubscribeAndWriteReachThePeer() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { $0.scan.enabled = false }
        let (sensor, server) = LinkAndCommandTests.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/status") { $0.text == "online" }
        try Self.command(watcher, #"{"id":"c1","command":"connect","address":"C0:11:22:33:44:77"}"#)
        #expect(try await watcher.next("ble/gw/responses/c1").text == #"{"id":"c1","command":"connect","ok":true,"address":"C0:11:22:33:44:77"}"#)

        // subscribe: the CCCD is on (0x0001, Vol 3, Part G, 3.3.3.3) and a notification
        // arrives on the characteristic's topic.
        try Self.command(watcher, #"{"id":"s1","command":"subscribe","address":"C0:11:22:33:44:77","service":"180F","characteristic":"2A19"}"#)
        #expect(try await watcher.next("ble/gw/responses/s1").text ==
                #"{"id":"s1","command":"subscribe","ok":true,"topic":"ble/gw/devices/C01122334477/180F/2A19"}"#)
        #expect(await server.clientConfigurations(of: Self.batteryLevel) == [0x0001])
        #expect(await server.notify(characteristic: Self.batteryLevel, value: [0x55]) == 1)
        let value = try await watcher.next(LinkAndCommandTests.batteryLevel)
        #expect(value.text == #"{"value":"55"}"#)

        // unsubscribe: the CCCD goes back to 0x0000, so the peer has nothing to send.
        try Self.command(watcher, #"{"id":"u1","command":"unsubscribe","address":"C0:11:22:33:44:77","service":"180F","characteristic":"2A19"}"#)
        #expect(try await watcher.next("ble/gw/responses/u1").text ==
                #"{"id":"u1","command":"unsubscribe","ok":true,"topic":"ble/gw/devices/C01122334477/180F/2A19"}"#)
        // The CCCD follows the value declaration in this database (handle 0x0017).
        let cccd = try #require(await server.valueHandle(of: Self.batteryLevel)) + 1
        let off: [UInt8] = [0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x00, 0x00]
        try await bed.vc.waitUntil("the Battery Level CCCD written with 0x0000", timeout: .seconds(10)) { vc in
            vc.l2capReceived.contains { $0.channelID == 0x0004 && $0.payload == off }
        }
        try await bed.vc.waitUntil("both CCCD writes answered (Write Response 0x13)") { vc in
            vc.l2capSent.filter { $0.channelID == 0x0004 && $0.payload == [0x13] }.count >= 2
        }
        #expect(await server.clientConfigurations(of: Self.batteryLevel) == [0x0000])
        #expect(await server.notify(characteristic: Self.batteryLevel, value: [0x56]) == 0)
        try Self.command(watcher, #"{"id":"u2","command":"unsubscribe","address":"C0:11:22:33:44:77","service":"180F","characteristic":"2A19"}"#)
        #expect(try await watcher.next("ble/gw/responses/u2").text.hasPrefix(#"{"id":"u2","command":"unsubscribe","ok":false,"error":{"code":"notSubscribed","#))
        #expect(await watcher.on(LinkAndCommandTests.batteryLevel).map(\.text) == [#"{"value":"55"}"#])

        // write: Heart Rate Control Point (0x2A39) takes 0x01, Reset Energy Expended (HRS 3.3);
        // the peer received an ATT Write Request (0x12, Vol 3, Part F, 3.4.5.1) with it.
        let handle = try #require(await server.valueHandle(of: BluetoothUUID(uuid16: 0x2A39)))
        try Self.command(watcher, #"{"id":"w1","command":"write","address":"C0:11:22:33:44:77","service":"180D","characteristic":"2A39","value":"01"}"#)
        #expect(try await watcher.next("ble/gw/responses/w1").text == #"{"id":"w1","command":"write","ok":true}"#)
        #expect(bed.vc.l2capReceived.contains { $0.channelID == 0x0004 && $0.payload == [0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x01] })
        await bed.stop()
        await watcher.stop()
    }

    @Test func scanOffStopsAdvertisementsAndScanOnBringsThemBack() async throws {
        // Flags, Complete Local Name "A" / "B" (Core Specification Supplement, Part A, 1.3, 1.2).
        let a = SimulatedPeripheral(address: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_41), type: .random),
                                    advertisingData: [0x02, 0x01, 0x06, 0x02, 0x09, 0x41], rssi: -50)
        let b = SimulatedPeripheral(address: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_42), type: .random),
                                    advertisingData: [0x02, 0x01, 0x06, 0x02, 0x09, 0x42], rssi: -50)
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: [a])
        #expect(try await watcher.next("ble/gw/devices/C01122334441").text.contains(#""name":"A""#))

        try Self.command(watcher, #"{"id":"off","command":"scan","enabled":false}"#)
        #expect(try await watcher.next("ble/gw/responses/off").text == #"{"id":"off","command":"scan","ok":true,"scanning":false}"#)
        try await bed.vc.waitUntil("the scan disabled") { !$0.isScanning }
        // B comes while the scan is off: the controller reports nothing, nothing is published.
        bed.vc.addPeripheral(b)
        try Self.command(watcher, #"{"id":"probe","command":"disconnect"}"#)
        _ = try await watcher.next("ble/gw/responses/probe")
        #expect(!bed.vc.isScanning)
        #expect(await watcher.on("ble/gw/devices/C01122334442").isEmpty)

        try Self.command(watcher, #"{"id":"on","command":"scan","enabled":true}"#)
        #expect(try await watcher.next("ble/gw/responses/on").text == #"{"id":"on","command":"scan","ok":true,"scanning":true}"#)
        #expect(try await watcher.next("ble/gw/devices/C01122334442").text.contains(#""name":"B""#))
        await bed.stop()
        await watcher.stop()
    }
}
