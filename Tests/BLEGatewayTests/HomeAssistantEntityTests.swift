import BLECore
import BLEGateway
import BLESensors
import Testing
import BLEWire

/// Discovery configs built from decoded sensors, without a broker: binary sensors, events,
/// numbered keys, trigger-based devices. BTHome payloads from bthome-ble's tests/test_parser_v2.py.
@Suite struct HomeAssistantEntityTests {
    static func device(_ hex: String, publishInterval: Duration = .seconds(10)) -> HomeAssistantDiscovery.Device {
        var decoder = SensorDecoder()
        let address = BluetoothAddress("A4:C1:38:8D:18:B2")!
        let data = AdvertisingData([.serviceData16(uuid: 0xFCD2, data: [UInt8](hex: hex)!)])
        let decoding = decoder.decode(SensorAdvertisement(address: LEAddress(address, type: .public), data: data))
        return HomeAssistantDiscovery.Device(address: address, name: "Shelly", decoding: decoding, publishInterval: publishInterval)
    }

    static func configs(_ device: HomeAssistantDiscovery.Device) -> [String: String] {
        Dictionary(uniqueKeysWithValues: HomeAssistantDiscovery.configs(for: device, topics: GatewayTopics(gatewayID: "gw")).map {
            ($0.topic, String(decoding: $0.payload, as: UTF8.self))
        })
    }

    @Test func binarySensorsAreOnOff() throws {
        // test_bthome_binary_sensor_window and opening: 0x2D = 1, 0x11 = 0.
        let c = Self.configs(Self.device("40 11 00 2d 01"))
        let window = try #require(c["homeassistant/binary_sensor/ble_A4C1388D18B2/window/config"])
        #expect(window.hasPrefix(#"{"name":"Window","unique_id":"ble_A4C1388D18B2_window","default_entity_id":"binary_sensor.ble_a4c1388d18b2_window","state_topic":"ble/+/devices/A4C1388D18B2","value_template":"{{ 'ON' if value_json.decoded.window else 'OFF' }}","device_class":"window","expire_after":30,"device":"#), "\(window)")
        #expect(c["homeassistant/binary_sensor/ble_A4C1388D18B2/opening/config"]?.contains(#""device_class":"opening""#) == true)
        #expect(c.keys.sorted() == ["homeassistant/binary_sensor/ble_A4C1388D18B2/opening/config",
                                    "homeassistant/binary_sensor/ble_A4C1388D18B2/window/config",
                                    "homeassistant/sensor/ble_A4C1388D18B2/rssi/config"])
    }

    @Test func buttonsAreEventEntitiesOfATriggerBasedDevice() throws {
        // test_bthome_event_triple_button_device with the trigger-based flag (0x44): button_2 and
        // button_3, events without expire_after; the device's RSSI does not expire either.
        let c = Self.configs(Self.device("44 3a 00 3a 01 3a 03"))
        let button = try #require(c["homeassistant/event/ble_A4C1388D18B2/button_2/config"])
        #expect(button.hasPrefix(#"{"name":"Button 2","unique_id":"ble_A4C1388D18B2_button_2","default_entity_id":"event.ble_a4c1388d18b2_button_2","state_topic":"ble/+/devices/A4C1388D18B2","event_types":["press","double_press","triple_press","long_press","long_double_press","long_triple_press","hold_press"],"value_template":"{% if value_json.decoded is defined and value_json.decoded.button_2 is defined %}{\"event_type\":\"{{ value_json.decoded.button_2 }}\"}{% endif %}","device_class":"button","device":"#), "\(button)")
        #expect(c["homeassistant/event/ble_A4C1388D18B2/button_3/config"] != nil)
        #expect(c["homeassistant/sensor/ble_A4C1388D18B2/rssi/config"]?.contains("expire_after") == false)
    }

    @Test func unitsAndClassesComeFromTheTable() throws {
        // test_bthome_co2 and test_bthome_double_temperature: HA's carbon_dioxide class in ppm, temperature_1 and _2 in °C.
        let c = Self.configs(Self.device("40 02 ca 09 02 cf 09 12 e2 04", publishInterval: .seconds(60)))
        #expect(c["homeassistant/sensor/ble_A4C1388D18B2/co2/config"]?.contains(#""unit_of_measurement":"ppm","device_class":"carbon_dioxide","state_class":"measurement","expire_after":180"#) == true)
        #expect(c["homeassistant/sensor/ble_A4C1388D18B2/temperature_2/config"]?.contains(#""name":"Temperature 2","unique_id":"ble_A4C1388D18B2_temperature_2""#) == true)
        // Energy is a meter: state_class total, as Home Assistant's BTHome integration has it.
        let energy = try #require(Self.configs(Self.device("40 0a 13 8a 14"))["homeassistant/sensor/ble_A4C1388D18B2/energy/config"])
        #expect(energy.contains(#""unit_of_measurement":"kWh","device_class":"energy","state_class":"total","expire_after":30"#), "\(energy)")
    }

    @Test func availabilityFollowsTheGatewaysThatFeedTheDevice() throws {
        // test_bthome_temperature_humidity: 0x02 = 25.06 °C, 0x03 = 50.55 %.
        let device = Self.device("40 02 ca 09 03 bf 13")
        let one = HomeAssistantDiscovery.configs(for: device, topics: GatewayTopics(gatewayID: "gw"), availability: ["ble/gw/status"])
        let temperature = try #require(one.first { $0.topic == "homeassistant/sensor/ble_A4C1388D18B2/temperature/config" })
        #expect(String(decoding: temperature.payload, as: UTF8.self).hasSuffix(#","availability":[{"topic":"ble/gw/status"}]}"#))
        let two = HomeAssistantDiscovery.configs(for: device, topics: GatewayTopics(gatewayID: "gw"), availability: ["ble/a/status", "ble/b/status"])
        let humidity = try #require(two.first { $0.topic == "homeassistant/sensor/ble_A4C1388D18B2/humidity/config" })
        #expect(String(decoding: humidity.payload, as: UTF8.self).hasSuffix(
            #","availability":[{"topic":"ble/a/status"},{"topic":"ble/b/status"}],"availability_mode":"any"}"#))
        // None given: expire_after alone.
        #expect(Self.configs(device).values.allSatisfy { !$0.contains("availability") })
    }
}
