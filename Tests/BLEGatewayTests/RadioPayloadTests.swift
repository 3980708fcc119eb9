import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// Topics and payloads of every advertiser kind, end to end: Bumble advertisers (scenario
/// `gateway-kinds`, Fixtures/peers/README.md) on the virtual radio, the `ble gateway` process
/// with both topic layouts, a real mosquitto and a subscriber. Bumble's controller reports
/// every advertisement as connectable and with TX_Power 0 (Vol 4, Part E, 7.7.65.13), so
/// `txPower` is 0 except where the data carries a TX Power Level (AD type 0x0A): "Maker" says 4.
/// Its scan response report repeats the advertising data instead of the scan response, so
/// "Beacon", whose name only fits in the scan response, is published without a name.
@Suite(.serialized) struct RadioPayloadTests {
    static let native: [(String, String)] = [
        ("ble/gwr/devices/F05EB1000101",
         #"{"address":"F0:5E:B1:00:01:01","addressType":"random","state":"present","rssi":-50,"txPower":0,"connectable":true,"manufacturerData":{"004C":"0215E2C56DB5DFFB48D2B060D0F5A71096E000010002C5"},"decoded":{"ibeacon":{"uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":2,"txPower":-59}}}"#),
        ("ble/gwr/devices/F05EB1000102",
         #"{"address":"F0:5E:B1:00:01:02","addressType":"random","state":"present","name":"Eddy","rssi":-50,"txPower":0,"connectable":true,"services":["FEAA"],"serviceData":{"FEAA":"10EB036578616D706C6507"},"decoded":{"eddystone":{"frame":"url","txPower":-21,"url":"https://example.com"}}}"#),
        ("ble/gwr/devices/F05EB1000103",
         #"{"address":"F0:5E:B1:00:01:03","addressType":"random","state":"present","name":"Batt","rssi":-50,"txPower":0,"connectable":true,"serviceData":{"180F":"5A"},"decoded":{"battery":90}}"#),
        ("ble/gwr/devices/F05EB1000104",
         #"{"address":"F0:5E:B1:00:01:04","addressType":"random","state":"present","name":"Env","rssi":-50,"txPower":0,"connectable":true,"serviceData":{"2A6D":"02760F00","2A6E":"1009","2A6F":"9411"},"decoded":{"temperature":23.2,"humidity":45,"pressure":1013.25}}"#),
        ("ble/gwr/devices/F05EB1000105",
         #"{"address":"F0:5E:B1:00:01:05","addressType":"random","state":"present","name":"Maker","rssi":-50,"txPower":4,"connectable":true,"manufacturerData":{"FFFF":"4852"}}"#),
    ]

    /// OpenMQTTGateway's BTtoMQTT layout: manufacturer data with the company id first (as on
    /// air, little endian), the first service data with its UUID, `batt`, `tempc`, `hum`.
    static let openMQTTGateway: [(String, String)] = [
        ("home/gwr/BTtoMQTT/F05EB1000101",
         #"{"id":"F0:5E:B1:00:01:01","mac_type":1,"rssi":-50,"txpower":0,"manufacturerdata":"4c000215e2c56db5dffb48d2b060d0f5a71096e000010002c5"}"#),
        ("home/gwr/BTtoMQTT/F05EB1000102",
         #"{"id":"F0:5E:B1:00:01:02","mac_type":1,"name":"Eddy","rssi":-50,"txpower":0,"servicedata":"10eb036578616d706c6507","servicedatauuid":"0xfeaa"}"#),
        ("home/gwr/BTtoMQTT/F05EB1000103",
         #"{"id":"F0:5E:B1:00:01:03","mac_type":1,"name":"Batt","rssi":-50,"txpower":0,"servicedata":"5a","servicedatauuid":"0x180f","batt":90}"#),
        ("home/gwr/BTtoMQTT/F05EB1000104",
         #"{"id":"F0:5E:B1:00:01:04","mac_type":1,"name":"Env","rssi":-50,"txpower":0,"servicedata":"02760f00","servicedatauuid":"0x2a6d","tempc":23.2,"hum":45}"#),
        ("home/gwr/BTtoMQTT/F05EB1000105",
         #"{"id":"F0:5E:B1:00:01:05","mac_type":1,"name":"Maker","rssi":-50,"txpower":4,"manufacturerdata":"ffff4852"}"#),
    ]

    @Test func everyAdvertiserKindOnBothLayouts() async throws {
        try await VirtualRadio.with(scenario: "gateway-kinds") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "#")
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--id", "gwr",
                                                                  "--layout", "both", "--publish-interval", "1"])
            // Each device's message must reach the subscriber with exactly this payload.
            for (topic, payload) in Self.native + Self.openMQTTGateway {
                let m = try await watcher.next(topic) { $0.text == payload }
                #expect(!m.retain && m.qos == .atMostOnce, "\(topic)")
            }
            let topics = Set(await watcher.messages.map(\.topic).filter { $0.contains("/devices/") || $0.contains("/BTtoMQTT/") })
            #expect(topics == Set((Self.native + Self.openMQTTGateway).map(\.0)), "\(topics.sorted())")
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            await watcher.stop()
        }
    }
}
