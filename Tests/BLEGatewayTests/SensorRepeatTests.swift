import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// A BTHome button that repeats its packet (as BTHome devices do) on the virtual controller's
/// manual clock: the press is published once; the periodic message of the same packet carries no
/// event; the next packet id is published at once. Payload layout from bthome.io (device
/// information 0x44: BTHome v2, trigger based; packet id 0x00; button 0x3A with 0x01 "press",
/// 0x02 "double_press").
@Suite(.serialized) struct SensorRepeatTests {
    @Test func aRepeatedPacketIsPublishedOnceAndItsEventNotAgain() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        var controller = VirtualController.Options()
        controller.time = .manual
        // Service Data 0xFCD2: 44, packet id 5, button press.
        var device = SimulatedPeripheral(address: AdvertisementTopicTests.address(9), advertisingData:
            [0x02, 0x01, 0x06, 0x08, 0x16, 0xD2, 0xFC, 0x44, 0x00, 0x05, 0x3A, 0x01], rssi: -60)
        device.advertisingInterval = .seconds(1)
        let bed = try await GatewayBed(broker: broker, peripherals: [device], controller: controller) { $0.scan.publishInterval = .seconds(5) }
        try await bed.vc.waitUntil("scanning") { $0.isScanning }
        let topic = "ble/gw/devices/C01122334409"
        // One advertising event a second with RSSI -40 - t; from second 7 on packet id 6, a double press.
        for t in 1...8 {
            device.rssi = Int8(-40 - t)
            if t == 7 { device.advertisingData[9] = 0x06; device.advertisingData[11] = 0x02 }
            bed.vc.addPeripheral(device)
            await bed.vc.advance(by: .seconds(1))
        }
        _ = try await watcher.next(topic) { PublishIntervalTests.rssi($0) == -47 }
        let messages = await watcher.on(topic)
        // Second 1: the press. 6: the periodic message of the same packet, without the event. 7: packet 6.
        #expect(messages.map { PublishIntervalTests.rssi($0) } == [-41, -46, -47], "\(messages.map(\.text))")
        #expect(messages.map { $0.text.hasSuffix(#""decoded":{"button":"press"}}"#) } == [true, false, false])
        #expect(messages.map { $0.text.contains("decoded") } == [true, false, true])
        #expect(messages.last?.text.hasSuffix(#""decoded":{"button":"double_press"}}"#) == true)
        await bed.stop()
        await watcher.stop()
    }
}
