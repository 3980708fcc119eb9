import BLECore
import BLEGateway
import BLETestSupport
import GATTClient
import Testing
import BLEWire

/// Periodic reads from the config (`devices[].read[].intervalSeconds`): each period reads the
/// characteristic again and publishes what it holds now; a refused read is published on the
/// topic's `/error` and retried at the next period. The peer is the heart-rate monitor
/// database (Battery Level 0x2A19 = 0x64; Heart Rate Measurement 0x2A37 is notify-only, so a
/// read of it is refused with Read Not Permitted, 0x02, Vol 3, Part F, 3.4.1.1).
@Suite(.serialized) struct PeriodicReadTests {
    static let heartRateMeasurement = "ble/gw/devices/C01122334477/180D/2A37"

    @Test func eachPeriodReadsAgainAndARefusedReadIsPublishedAndRetried() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: []) { c in
            LinkAndCommandTests.holdTheSensor(&c) { device in
                device.subscribe = []
                device.read = [
                    GatewayConfig.PeriodicRead(characteristic: GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180F), characteristic: BluetoothUUID(uuid16: 0x2A19)),
                                               interval: .milliseconds(200)),
                    GatewayConfig.PeriodicRead(characteristic: GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180D), characteristic: BluetoothUUID(uuid16: 0x2A37)),
                                               interval: .milliseconds(200)),
                ]
            }
        }
        let (sensor, server) = LinkAndCommandTests.sensor(bed.vc)
        bed.vc.addPeripheral(sensor)

        let first = try await watcher.next(LinkAndCommandTests.batteryLevel)
        #expect(first.text == #"{"value":"64"}"#)
        #expect(first.qos == .atLeastOnce)
        // The peer's value changes (no subscriber, so nothing is notified): a later period
        // reads the new value.
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x41]) == 0)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"41"}"# }

        // The refused read: an error message each period, naming the refusal; no value.
        let error = try await watcher.next(Self.heartRateMeasurement + "/error")
        #expect(error.text.contains("Read Not Permitted (0x02)"), "\(error.text)")
        #expect(await watcher.on(Self.heartRateMeasurement).isEmpty)
        await watcher.clear()
        let again = try await watcher.next(Self.heartRateMeasurement + "/error")
        #expect(again.text == error.text)

        // Every period sent a Read Request (0x0A): at least two per characteristic so far.
        let reads = await server.receivedOpcodes().filter { $0 == .readRequest }.count
        #expect(reads >= 4)
        await bed.stop()
        await watcher.stop()
    }
}
