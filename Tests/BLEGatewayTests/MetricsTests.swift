import BLECore
import BLEGateway
import Foundation
import Testing

/// The retained metrics message.
@Suite(.serialized) struct MetricsTests {
    @Test func metricsArePublishedRetainedWithEveryCounter() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: [AdvertisementTopicTests.battery]) { $0.metricsInterval = .milliseconds(200) }
        _ = try await watcher.next("ble/gw/devices/C01122334401")
        let m = try await watcher.next("ble/gw/metrics")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any])
        #expect(Set(object.keys) == ["reportsPerSecond", "publishesPerSecond", "links", "reconnects", "connectFailures", "dropped", "queueDepth", "adapter", "adapterReopens"])
        #expect(object["links"] as? Int == 0)
        #expect(object["reconnects"] as? Int == 0)
        #expect(object["connectFailures"] as? Int == 0)
        #expect(object["dropped"] as? Int == 0)
        await bed.stop()
        // Retained: a late subscriber gets the last one at once.
        let late = try await Watcher.start(broker, "ble/gw/metrics")
        #expect(try await late.next("ble/gw/metrics").retain)
        await late.stop()
        await watcher.stop()
    }
}

/// Home Assistant discovery configs for a device with a decoded battery level.
@Suite(.serialized) struct HomeAssistantDiscoveryTests {
    @Test func aBatteryDeviceGetsRSSIAndBatterySensors() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "homeassistant/#")
        let bed = try await GatewayBed(broker: broker, peripherals: [AdvertisementTopicTests.battery]) { $0.homeAssistantDiscovery = true }
        let battery = try await watcher.next("homeassistant/sensor/ble_C01122334401/battery/config")
        #expect(battery.text == #"{"name":"Battery","unique_id":"ble_C01122334401_battery","default_entity_id":"sensor.ble_c01122334401_battery","state_topic":"ble/+/devices/C01122334401","value_template":"{{ value_json.decoded.battery }}","unit_of_measurement":"%","device_class":"battery","state_class":"measurement","expire_after":30,"device":{"identifiers":["ble_C01122334401"],"connections":[["bluetooth","C0:11:22:33:44:01"]],"name":"Therm"},"origin":{"name":"swift-ble-host","sw_version":"\#(SwiftBLEHost.version)"},"availability":[{"topic":"ble/gw/status"}]}"#)
        let rssi = try await watcher.next("homeassistant/sensor/ble_C01122334401/rssi/config")
        #expect(rssi.text.contains(#""value_template":"{{ value_json.rssi }}","unit_of_measurement":"dBm","device_class":"signal_strength""#))
        #expect(rssi.qos == .atLeastOnce)
        await bed.stop()
        await watcher.stop()
    }
}
