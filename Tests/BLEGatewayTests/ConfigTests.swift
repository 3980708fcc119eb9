import BLECore
import BLEGateway
import Foundation
import Testing
import BLEWire

/// Config files with one mistake each: the error names the key.
@Suite struct ConfigTests {
    static func mistake(_ json: String) -> ConfigError? {
        do {
            var c = try GatewayConfig.decode(Data(json.utf8))
            if c.broker.url == nil { c.broker.url = "mqtt://127.0.0.1:1883" }
            if c.id == nil { c.id = "gw" }
            try c.validate()
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        (#"{"mqtt": "#, "(file)"),
        (#"{"mqt": {}}"#, "mqt"),
        (#"{"scan": {"lostAfterSeconds": "ten"}}"#, "scan.lostAfterSeconds"),
        (#"{"scan": {"lostAfterSeconds": 0}}"#, "scan.lostAfterSeconds"),
        (#"{"scan": {"pasive": true}}"#, "scan.pasive"),
        (#"{"metricsIntervalSeconds": -1}"#, "metricsIntervalSeconds"),
        (#"{"mqtt": {"url": "tcp://broker"}}"#, "mqtt.url"),
        (#"{"mqtt": {"url": "mqtt://broker:99999"}}"#, "mqtt.url"),
        (#"{"mqtt": {"queueCapacity": 0}}"#, "mqtt.queueCapacity"),
        (#"{"mqtt": {"certFile": "/c.pem"}}"#, "mqtt.keyFile"),
        (#"{"id": "a/b"}"#, "id"),
        (#"{"id": ""}"#, "id"),
        (#"{"layout": "zigbee"}"#, "layout"),
        (#"{"devices": [{"address": "nope"}]}"#, "devices[0].address"),
        (#"{"devices": [{}]}"#, "devices[0].address"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "addressType": "static"}]}"#, "devices[0].addressType"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "subscribe": [{"service": "XYZ", "characteristic": "2A19"}]}]}"#, "devices[0].subscribe[0].service"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "subscribe": [{"service": "180F"}]}]}"#, "devices[0].subscribe[0].characteristic"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "read": [{"service": "180F", "characteristic": "2A19"}]}]}"#, "devices[0].read[0].intervalSeconds"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "reconect": {}}]}"#, "devices[0].reconect"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "reconnect": {"maxAttempts": -1}}]}"#, "devices[0].reconnect.maxAttempts"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "security": "high"}]}"#, "devices[0].security"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55", "security": 2}]}"#, "devices[0].security"),
        (#"{"devices": [{"address": "C0:11:22:33:44:55"}, {"address": "C0:11:22:33:44:55"}]}"#, "devices[1].address"),
    ])
    func eachMistakeNamesItsKey(json: String, key: String) {
        let error = Self.mistake(json)
        #expect(error?.key == key, "\(json): \(error.map(\.description) ?? "accepted")")
        #expect(error.map { !$0.description.contains("\n") } ?? true)
    }

    @Test func aFullConfigDecodes() throws {
        let json = #"""
        {"mqtt": {"url": "mqtts://broker.example:8884", "username": "gw", "password": "pw", "caFile": "/etc/ca.pem",
                  "queueCapacity": 500, "keepAliveSeconds": 20, "reconnectDelaySeconds": 2, "reconnectMaximumDelaySeconds": 60},
         "id": "hall", "topicPrefix": "site1", "layout": "both", "metricsIntervalSeconds": 15,
         "scan": {"enabled": true, "passive": true, "publishIntervalSeconds": 5, "lostAfterSeconds": 45},
         "devices": [{"address": "C0:11:22:33:44:55", "addressType": "random",
                      "subscribe": [{"service": "180D", "characteristic": "2A37"}],
                      "read": [{"service": "180F", "characteristic": "2A19", "intervalSeconds": 600}],
                      "reconnect": {"maxAttempts": 10, "initialDelaySeconds": 1, "maximumDelaySeconds": 120}},
                     {"address": "C0:11:22:33:44:66", "security": "secureConnections"}]}
        """#
        let c = try GatewayConfig.decode(Data(json.utf8))
        try c.validate()
        #expect(c.id == "hall" && c.topicPrefix == "site1" && c.layout == .both)
        #expect(c.broker.queueCapacity == 500 && c.broker.reconnectMaximumDelay == .seconds(60))
        #expect(c.scan.passive && c.scan.publishInterval == .seconds(5) && c.scan.lostAfter == .seconds(45))
        #expect(c.metricsInterval == .seconds(15))
        let d = try #require(c.devices.first)
        #expect(d.address == LEAddress("C0:11:22:33:44:55", type: .random))
        #expect(d.subscribe == [GatewayConfig.CharacteristicRef(service: BluetoothUUID(uuid16: 0x180D), characteristic: BluetoothUUID(uuid16: 0x2A37))])
        #expect(d.read.first?.interval == .seconds(600))
        #expect(d.reconnect.maxAttempts == 10 && d.reconnect.maximumDelay == .seconds(120))
        #expect(d.security == nil && c.devices.last?.security == .secureConnections)
        let o = try c.mqttOptions()
        #expect(o.host == "broker.example" && o.port == 8884 && o.tls?.caFile == "/etc/ca.pem")
        #expect(o.will == MQTTMessage(topic: "site1/hall/status", text: "offline", qos: .atLeastOnce, retain: true))
    }
}
