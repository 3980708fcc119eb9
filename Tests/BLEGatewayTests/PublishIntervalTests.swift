import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// The per-device publish interval on the virtual controller's manual clock: an unchanged
/// device goes out again once `scan.publishIntervalSeconds` has passed since its last message,
/// a changed one at once. The gateway takes its time from the reports (the central's clock),
/// so the test moves virtual time and never sleeps.
@Suite(.serialized) struct PublishIntervalTests {
    /// The RSSI of a device message (each second's report has its own, so a message tells
    /// which report it came from).
    static func rssi(_ m: MQTTMessage) -> Int? {
        ((try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any])?["rssi"] as? Int
    }

    @Test func unchangedAtMostEveryIntervalChangedAtOnce() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        var controller = VirtualController.Options()
        controller.time = .manual
        var device = AdvertisementTopicTests.battery
        device.advertisingInterval = .seconds(1)
        let bed = try await GatewayBed(broker: broker, peripherals: [device], controller: controller) { $0.scan.publishInterval = .seconds(5) }
        try await bed.vc.waitUntil("scanning") { $0.isScanning }
        let topic = "ble/gw/devices/C01122334401"

        // One advertising event a second, second t with RSSI -40 - t; from second 7 on the
        // Battery service data says 0x50 (80 %) instead of 0x5A (90 %).
        for t in 1...12 {
            device.rssi = Int8(-40 - t)
            if t == 7 { device.advertisingData[device.advertisingData.count - 1] = 0x50 }
            bed.vc.addPeripheral(device) // its next advertising event is one interval from now
            await bed.vc.advance(by: .seconds(1))
        }
        // Second 1: new. 2-5: unchanged, under 5 s since the message. 6: 5 s since. 7: changed.
        // 8-11: unchanged. 12: 5 s since second 7.
        _ = try await watcher.next(topic) { Self.rssi($0) == -52 }
        let messages = await watcher.on(topic)
        #expect(messages.map { Self.rssi($0) } == [-41, -46, -47, -52], "\(messages.map(\.text))")
        #expect(messages.map { $0.text.contains(#""decoded":{"battery":90}"#) } == [true, true, false, false])
        #expect(messages.map { $0.text.contains(#""decoded":{"battery":80}"#) } == [false, false, true, true])
        await bed.stop()
        await watcher.stop()
    }
}
