import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// Sensors on the virtual radio (scenario `gateway-sensors`, Fixtures/peers/README.md): the
/// `ble gateway` process with a bindkey in its config and Home Assistant discovery, a real
/// mosquitto and a subscriber. Payloads and values from bthome-ble's and xiaomi-ble's tests.
@Suite(.serialized) struct SensorRadioTests {
    static let devices: [(String, String)] = [
        ("ble/gws/devices/F05EB1000201",
         #"{"address":"F0:5E:B1:00:02:01","addressType":"random","state":"present","name":"BTH","rssi":-50,"txPower":0,"connectable":true,"serviceData":{"FCD2":"400009015D025D0903B718"},"decoded":{"battery":93,"temperature":23.97,"humidity":63.27}}"#),
        // test_bthome_with_mac_encrypted: the payload carries the MAC the key is given for. Its name
        // only fits in the scan response, which Bumble's reports replace with the advertising data.
        ("ble/gws/devices/F05EB1000202",
         #"{"address":"F0:5E:B1:00:02:02","addressType":"random","state":"present","rssi":-50,"txPower":0,"connectable":true,"serviceData":{"FCD2":"43A5808FE64854F196C06FFB4900112233F08ECBDE"},"decoded":{"temperature":25.06,"humidity":50.55,"encrypted":true}}"#),
        ("ble/gws/devices/F05EB1000203",
         #"{"address":"F0:5E:B1:00:02:03","addressType":"random","state":"present","name":"Mi","rssi":-50,"txPower":0,"connectable":true,"serviceData":{"FE95":"50305B05034C94B438C1A40D10041001EA01"},"brand":"Xiaomi","model":"LYWSD03MMC","decoded":{"temperature":27.2,"humidity":49}}"#),
    ]

    /// The discovery config of one value, as Home Assistant reads it.
    static func config(_ compact: String, _ key: String, name: String, value: String, unit: String, deviceClass: String, device: String) -> String {
        let address = stride(from: 0, to: 12, by: 2).map { i -> String in
            let start = compact.index(compact.startIndex, offsetBy: i)
            return String(compact[start..<compact.index(start, offsetBy: 2)])
        }.joined(separator: ":")
        return #"{"name":"\#(name)","unique_id":"ble_\#(compact)_\#(key)","default_entity_id":"sensor.ble_\#(compact.lowercased())_\#(key)","state_topic":"ble/+/devices/\#(compact)","value_template":"{{ \#(value) }}","unit_of_measurement":"\#(unit)","device_class":"\#(deviceClass)","state_class":"measurement","expire_after":3,"device":{"identifiers":["ble_\#(compact)"],"connections":[["bluetooth","\#(address)"]],\#(device)},"origin":{"name":"swift-ble-host","sw_version":"\#(SwiftBLEHost.version)"},"availability":[{"topic":"ble/gws/status"}]}"#
    }

    @Test func bthomeAndXiaomiSensorsArePublishedWithDiscovery() async throws {
        try await VirtualRadio.with(scenario: "gateway-sensors") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "#")
            let (file, dir) = try GatewayRadioTests.config(#"{"keys": {"54:48:E6:8F:80:A5": "231d39c1d7cc1ab1aee224cd096db932"}}"#)
            defer { try? FileManager.default.removeItem(at: dir) }
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--id", "gws",
                                                                  "--config", file.path, "--publish-interval", "1", "--ha-discovery"])
            for (topic, payload) in Self.devices {
                _ = try await watcher.next(topic) { $0.text == payload }
            }
            let temperature = try await watcher.next("homeassistant/sensor/ble_F05EB1000203/temperature/config")
            #expect(temperature.text == Self.config("F05EB1000203", "temperature", name: "Temperature", value: "value_json.decoded.temperature",
                                                    unit: "°C", deviceClass: "temperature", device: #""name":"Mi","manufacturer":"Xiaomi","model":"LYWSD03MMC""#))
            #expect(temperature.qos == .atLeastOnce)
            let battery = try await watcher.next("homeassistant/sensor/ble_F05EB1000201/battery/config")
            #expect(battery.text == Self.config("F05EB1000201", "battery", name: "Battery", value: "value_json.decoded.battery",
                                                unit: "%", deviceClass: "battery", device: #""name":"BTH""#))
            let humidity = try await watcher.next("homeassistant/sensor/ble_F05EB1000202/humidity/config")
            #expect(humidity.text == Self.config("F05EB1000202", "humidity", name: "Humidity", value: "value_json.decoded.humidity",
                                                 unit: "%", deviceClass: "humidity", device: #""name":"F0:5E:B1:00:02:02""#))
            let rssi = try await watcher.next("homeassistant/sensor/ble_F05EB1000201/rssi/config")
            #expect(rssi.text.hasPrefix(#"{"name":"RSSI","unique_id":"ble_F05EB1000201_rssi","default_entity_id":"sensor.ble_f05eb1000201_rssi","state_topic":"ble/+/devices/F05EB1000201","value_template":"{{ value_json.rssi }}","unit_of_measurement":"dBm","device_class":"signal_strength""#), "\(rssi.text)")
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            // The key never reaches the broker.
            let everything = await watcher.messages.map(\.text).joined()
            #expect(!everything.lowercased().contains("231d39c1"))
            // Each sensor's values were announced once: no other discovery topics than these.
            let discovery = Set(await watcher.messages.map(\.topic).filter { $0.hasPrefix("homeassistant/") })
            #expect(discovery == ["homeassistant/sensor/ble_F05EB1000201/rssi/config", "homeassistant/sensor/ble_F05EB1000201/battery/config",
                                  "homeassistant/sensor/ble_F05EB1000201/temperature/config", "homeassistant/sensor/ble_F05EB1000201/humidity/config",
                                  "homeassistant/sensor/ble_F05EB1000202/rssi/config", "homeassistant/sensor/ble_F05EB1000202/temperature/config",
                                  "homeassistant/sensor/ble_F05EB1000202/humidity/config", "homeassistant/sensor/ble_F05EB1000203/rssi/config",
                                  "homeassistant/sensor/ble_F05EB1000203/temperature/config", "homeassistant/sensor/ble_F05EB1000203/humidity/config"])
            #expect(await watcher.messages.filter { $0.topic == "homeassistant/sensor/ble_F05EB1000203/temperature/config" }.count == 1)
            await watcher.stop()
            // Retained: Home Assistant started later still finds the entity.
            let late = try await Watcher.start(broker, "homeassistant/sensor/ble_F05EB1000203/temperature/config")
            #expect(try await late.next("homeassistant/sensor/ble_F05EB1000203/temperature/config").retain)
            await late.stop()
        }
    }

    @Test func keysAreReloadedOnSIGHUPAndABadOneIsRefusedWithoutShowingIt() async throws {
        try await VirtualRadio.with(scenario: "gateway-sensors") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")
            let (file, dir) = try GatewayRadioTests.config(#"{"id": "gwk"}"#)
            defer { try? FileManager.default.removeItem(at: dir) }
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url,
                                                                  "--config", file.path, "--publish-interval", "1"])
            // Without its key the encrypted sensor is published as encrypted, with the reason and no values.
            let refused = try await watcher.next("ble/gwk/devices/F05EB1000202")
            #expect(refused.text.hasSuffix(#""decoded":{"encrypted":true,"reason":"encrypted; no key for 54:48:E6:8F:80:A5: add one under \"keys\" in the config"}}"#), "\(refused.text)")
            // A key one byte short: the config is not taken, the line names the device, not the key.
            try #"{"id": "gwk", "keys": {"54:48:E6:8F:80:A5": "231d39c1d7cc1ab1aee224cd096db9"}}"#.write(to: file, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let text = await Child.read(gateway.stderr, timeout: .seconds(10)) { text in
                text.components(separatedBy: "SIGHUP: config not reloaded").dropFirst().first?.contains("\n") == true
            }
            let line = text.split(separator: "\n").first { $0.contains("SIGHUP: config not reloaded") }.map(String.init) ?? ""
            #expect(line.hasSuffix("config: keys.54:48:E6:8F:80:A5: the key of 54:48:E6:8F:80:A5 must be 16 bytes written as 32 hex digits"), "\(text)")
            #expect(!text.lowercased().contains("231d39"))
            try #"{"id": "gwk", "keys": {"54:48:E6:8F:80:A5": "231d39c1d7cc1ab1aee224cd096db932"}}"#.write(to: file, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let decoded = try await watcher.next("ble/gwk/devices/F05EB1000202") { $0.text.contains("temperature") }
            #expect(decoded.text.hasSuffix(#""decoded":{"temperature":25.06,"humidity":50.55,"encrypted":true}}"#), "\(decoded.text)")
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            #expect(!(await watcher.messages.map(\.text).joined().lowercased().contains("231d39")))
            await watcher.stop()
        }
    }
}
