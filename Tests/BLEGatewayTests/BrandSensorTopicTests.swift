import BLECore
import BLEGateway
import BLETestSupport
import Testing
import BLEWire

/// One sensor of each brand format on the in-process virtual controller, through the gateway and a
/// real mosquitto, with Home Assistant discovery: the exact device messages and discovery configs.
/// The advertisements are rows of Fixtures/sensors/brands.tsv (named in each comment; sources in
/// Fixtures/README.md) and a MiBeacon frame of xiaomi-ble's test_Xiaomi_HHCCJCY01_all_values; the
/// expected values are those of the decoders' reference tests (BLESensorsTests).
@Suite(.serialized) struct BrandSensorTopicTests {
    static func sensor(_ last: UInt8, _ data: String, scanResponse: String = "") -> SimulatedPeripheral {
        SimulatedPeripheral(address: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_55_00 | UInt64(last)), type: .random),
                            advertisingData: [UInt8](hex: data)!, scanResponseData: [UInt8](hex: scanResponse)!, rssi: -60)
    }

    static let sensors = [
        // govee-h5075: 26.8 °C, 52.6 %, 100 %; the model from the name in the scan response.
        sensor(1, "02010609ff88ec000418ee6400", scanResponse: "0d09475648353037355f31323334"),
        // switchbot-outdoor-meter: manufacturer data 0x0969 in the report, service data 0xFD3D
        // (battery) and the name in the scan response, merged.
        sensor(2, "0201060fff6909aabbccddeeff8b0305993200", scanResponse: "06163dfd7700640e094f7574646f6f72204d65746572"),
        // switchbot-contact-closed: binary sensors.
        sensor(3, "0201060c16000d64c05c010000000000"),
        // qingping-cgdk2.
        sensor(4, "0201061416cdfd8810ffeeddccbbaa0104e8008f0302010b"),
        // inkbird-ibs-th1.
        sensor(5, "02010604097370730aff660a03150010805908"),
        // ruuvi-v5-valid (docs.ruuvi.com's valid vector).
        sensor(6, "0201061bff99040512fc5394c37c0004fffc040cac364200cdcbb8334c884f"),
        // mopeka-pro-plus: tank level and reading quality.
        sensor(7, "0201060303e5fe0dff5900087043b6c3e0f509fae3"),
        // MiBeacon moisture (0x1008) of an HHCCJCY01, 64 %.
        sensor(8, "020106131695fe71209800477a3e6a8d7cc40d08100140"),
    ]

    static let messages: [(String, String)] = [
        ("ble/gw/devices/C01122335501",
         #"{"address":"C0:11:22:33:55:01","addressType":"random","state":"present","name":"GVH5075_1234","rssi":-60,"connectable":true,"manufacturerData":{"EC88":"000418EE6400"},"brand":"Govee","model":"H5075","decoded":{"temperature":26.8,"humidity":52.6,"battery":100}}"#),
        ("ble/gw/devices/C01122335502",
         #"{"address":"C0:11:22:33:55:02","addressType":"random","state":"present","name":"Outdoor Meter","rssi":-60,"connectable":true,"manufacturerData":{"0969":"AABBCCDDEEFF8B0305993200"},"serviceData":{"FD3D":"770064"},"brand":"SwitchBot","model":"Outdoor Meter","decoded":{"temperature":25.5,"humidity":50,"battery":100}}"#),
        ("ble/gw/devices/C01122335503",
         #"{"address":"C0:11:22:33:55:03","addressType":"random","state":"present","rssi":-60,"connectable":true,"serviceData":{"0D00":"64C05C010000000000"},"brand":"SwitchBot","model":"Contact Sensor","decoded":{"motion":true,"opening":false,"light":true,"battery":92}}"#),
        ("ble/gw/devices/C01122335504",
         #"{"address":"C0:11:22:33:55:04","addressType":"random","state":"present","rssi":-60,"connectable":true,"serviceData":{"FDCD":"8810FFEEDDCCBBAA0104E8008F0302010B"},"brand":"Qingping","model":"CGDK2","decoded":{"temperature":23.2,"humidity":91.1,"battery":11}}"#),
        ("ble/gw/devices/C01122335505",
         #"{"address":"C0:11:22:33:55:05","addressType":"random","state":"present","name":"sps","rssi":-60,"connectable":true,"manufacturerData":{"0A66":"03150010805908"},"brand":"Inkbird","model":"IBS-TH1","decoded":{"temperature":26.62,"humidity":53.79,"battery":89}}"#),
        ("ble/gw/devices/C01122335506",
         #"{"address":"C0:11:22:33:55:06","addressType":"random","state":"present","rssi":-60,"connectable":true,"manufacturerData":{"0499":"0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F"},"brand":"Ruuvi","model":"RuuviTag RAWv2","decoded":{"temperature":24.3,"humidity":53.49,"pressure":1000.44,"acceleration_x":0.04,"acceleration_y":-0.04,"acceleration_z":10.16,"voltage":2.977,"movement_counter":66}}"#),
        ("ble/gw/devices/C01122335507",
         #"{"address":"C0:11:22:33:55:07","addressType":"random","state":"present","rssi":-60,"connectable":true,"services":["FEE5"],"manufacturerData":{"0059":"087043B6C3E0F509FAE3"},"brand":"Mopeka","model":"M1015 Pro Plus","decoded":{"temperature":27,"tank_level":341,"reading_quality":100,"battery":100,"voltage":3.5}}"#),
        ("ble/gw/devices/C01122335508",
         #"{"address":"C0:11:22:33:55:08","addressType":"random","state":"present","rssi":-60,"connectable":true,"serviceData":{"FE95":"71209800477A3E6A8D7CC40D08100140"},"brand":"Xiaomi","model":"HHCCJCY01","decoded":{"moisture":64}}"#),
    ]

    /// The retained discovery config of one value (gateway `gw` on its own, 10 s publish interval).
    static func config(_ last: String, _ key: String, component: String = "sensor", name: String, fields: String, device: String) -> String {
        let compact = "C011223355" + last
        return #"{"name":"\#(name)","unique_id":"ble_\#(compact)_\#(key)","default_entity_id":"\#(component).ble_\#(compact.lowercased())_\#(key)","state_topic":"ble/+/devices/\#(compact)",\#(fields),"expire_after":30,"device":{"identifiers":["ble_\#(compact)"],"connections":[["bluetooth","C0:11:22:33:55:\#(last)"]],\#(device)},"origin":{"name":"swift-ble-host","sw_version":"\#(SwiftBLEHost.version)"},"availability":[{"topic":"ble/gw/status"}]}"#
    }

    @Test func eachBrandIsPublishedWithItsDiscovery() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "#")
        let bed = try await GatewayBed(broker: broker, peripherals: Self.sensors) { $0.homeAssistantDiscovery = true }
        for (topic, payload) in Self.messages {
            _ = try await watcher.next(topic) { $0.text == payload }
        }
        let level = try await watcher.next("homeassistant/sensor/ble_C01122335507/tank_level/config")
        #expect(level.text == Self.config("07", "tank_level", name: "Tank level",
                                          fields: #""value_template":"{{ value_json.decoded.tank_level }}","unit_of_measurement":"mm","device_class":"distance","state_class":"measurement""#,
                                          device: #""name":"M1015 Pro Plus 5507","manufacturer":"Mopeka","model":"M1015 Pro Plus""#))
        let opening = try await watcher.next("homeassistant/binary_sensor/ble_C01122335503/opening/config")
        #expect(opening.text == Self.config("03", "opening", component: "binary_sensor", name: "Opening",
                                            fields: #""value_template":"{{ 'ON' if value_json.decoded.opening else 'OFF' }}","device_class":"opening""#,
                                            device: #""name":"Contact Sensor 5503","manufacturer":"SwitchBot","model":"Contact Sensor""#))
        let quality = try await watcher.next("homeassistant/sensor/ble_C01122335507/reading_quality/config")
        #expect(quality.text.contains(#""value_template":"{{ value_json.decoded.reading_quality }}","unit_of_measurement":"%","state_class":"measurement","expire_after":30,"#), "\(quality.text)")
        // Every decoded value of every sensor has its one config, in its component.
        var expected: Set<String> = []
        let keys: [(String, [String], [String])] = [
            ("01", ["temperature", "humidity", "battery"], []),
            ("02", ["temperature", "humidity", "battery"], []),
            ("03", ["battery"], ["motion", "opening", "light"]),
            ("04", ["temperature", "humidity", "battery"], []),
            ("05", ["temperature", "humidity", "battery"], []),
            ("06", ["temperature", "humidity", "pressure", "acceleration_x", "acceleration_y", "acceleration_z", "voltage", "movement_counter"], []),
            ("07", ["temperature", "tank_level", "reading_quality", "battery", "voltage"], []),
            ("08", ["moisture"], []),
        ]
        for (last, sensors, binary) in keys {
            expected.insert("homeassistant/sensor/ble_C011223355\(last)/rssi/config")
            for k in sensors { expected.insert("homeassistant/sensor/ble_C011223355\(last)/\(k)/config") }
            for k in binary { expected.insert("homeassistant/binary_sensor/ble_C011223355\(last)/\(k)/config") }
        }
        // A value's config can follow the device message that first carried it (MiBeacon sends
        // one value per frame): wait for each before stopping.
        for topic in expected { _ = try await watcher.next(topic) }
        await bed.stop()
        let discovery = await watcher.messages.map(\.topic).filter { $0.hasPrefix("homeassistant/") }
        #expect(Set(discovery) == expected)
        #expect(discovery.count == expected.count)
        await watcher.stop()
        // Retained: Home Assistant started later still finds the entity.
        let late = try await Watcher.start(broker, "homeassistant/sensor/ble_C01122335507/tank_level/config")
        #expect(try await late.next("homeassistant/sensor/ble_C01122335507/tank_level/config").retain)
        await late.stop()
    }
}
