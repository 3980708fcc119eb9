import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// Home Assistant discovery for the decoded Environmental Sensing values. Service Data of the
/// GSS characteristics (3.204 Temperature sint16 in 0.01 °C, 3.114 Humidity uint16 in 0.01 %,
/// 3.181 Pressure uint32 in 0.1 Pa, published in hPa, Home Assistant's default unit), through a real mosquitto.
@Suite(.serialized) struct HomeAssistantDecodedValuesTests {
    /// Complete Local Name "Env"; Service Data 0x2A6E = 0x0910 (23.20 °C), 0x2A6F = 0x1194
    /// (45.00 %), 0x2A6D = 0x000F7602 (1,013,250 × 0.1 Pa = 1013.25 hPa).
    static let environment = SimulatedPeripheral(address: AdvertisementTopicTests.address(5), advertisingData:
        [0x04, 0x09, 0x45, 0x6E, 0x76,
         0x05, 0x16, 0x6E, 0x2A, 0x10, 0x09,
         0x05, 0x16, 0x6F, 0x2A, 0x94, 0x11,
         0x07, 0x16, 0x6D, 0x2A, 0x02, 0x76, 0x0F, 0x00], rssi: -58)

    @Test func anEnvironmentalSensorGetsTemperatureHumidityAndPressureSensors() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "#")
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.environment]) { $0.homeAssistantDiscovery = true }
        let device = try await watcher.next("ble/gw/devices/C01122334405")
        #expect(device.text.hasSuffix(#""decoded":{"temperature":23.2,"humidity":45,"pressure":1013.25}}"#), "\(device.text)")

        let temperature = try await watcher.next("homeassistant/sensor/ble_C01122334405/temperature/config")
        // Names without the device's, ids from the device only, the default publish interval (10 s) × 3 to expire.
        #expect(temperature.text == #"{"name":"Temperature","unique_id":"ble_C01122334405_temperature","default_entity_id":"sensor.ble_c01122334405_temperature","state_topic":"ble/+/devices/C01122334405","value_template":"{{ value_json.decoded.temperature }}","unit_of_measurement":"°C","device_class":"temperature","state_class":"measurement","expire_after":30,"device":{"identifiers":["ble_C01122334405"],"connections":[["bluetooth","C0:11:22:33:44:05"]],"name":"Env"},"origin":{"name":"swift-ble-host","sw_version":"\#(SwiftBLEHost.version)"},"availability":[{"topic":"ble/gw/status"}]}"#)
        #expect(temperature.qos == .atLeastOnce)
        let humidity = try await watcher.next("homeassistant/sensor/ble_C01122334405/humidity/config")
        #expect(humidity.text.contains(#""value_template":"{{ value_json.decoded.humidity }}","unit_of_measurement":"%","device_class":"humidity""#))
        let pressure = try await watcher.next("homeassistant/sensor/ble_C01122334405/pressure/config")
        #expect(pressure.text.contains(#""value_template":"{{ value_json.decoded.pressure }}","unit_of_measurement":"hPa","device_class":"pressure""#))
        _ = try await watcher.next("homeassistant/sensor/ble_C01122334405/rssi/config")
        await bed.stop()
        // Only the values the device shows: no battery sensor.
        #expect(await watcher.on("homeassistant/sensor/ble_C01122334405/battery/config").isEmpty)
        await watcher.stop()
        // Retained: Home Assistant started later still finds the sensors.
        let late = try await Watcher.start(broker, "homeassistant/sensor/ble_C01122334405/pressure/config")
        #expect(try await late.next("homeassistant/sensor/ble_C01122334405/pressure/config").retain)
        await late.stop()
    }
}
