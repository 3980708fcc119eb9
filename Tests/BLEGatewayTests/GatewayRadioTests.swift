import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// The `ble gateway` process against Bumble peripherals on the virtual radio and a real
/// mosquitto: every command and its answer, a device that keeps dropping its link, and a broker
/// restart while a device notifies. Devices (Fixtures/peers/scenarios): "all" has the heart-rate
/// monitor F0:5E:B1:00:00:01 (Manufacturer Name 0x2A29 "Virtual Sensors"; Heart Rate Control
/// Point 0x2A39 accepts 0x01 and refuses anything else with ATT error 0x80; Battery Level
/// 0x2A19 notifies each second, counting down from 100) and the lab device F0:5E:B1:00:00:02
/// (6E400006 notifies a uint32 little-endian counter from 1 every 100 ms); "flaky" has
/// F0:5E:B1:00:00:11, which ends every link 3 s after it is made (Remote User Terminated
/// Connection, 0x13). Each new subscription starts a notifying sequence afresh.
@Suite(.serialized) struct GatewayRadioTests {
    static func config(_ json: String) throws -> (file: URL, dir: URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwradio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("gateway.json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        return (file, dir)
    }

    static func command(_ watcher: Watcher, _ id: String, _ json: String) throws {
        try watcher.client.publish(MQTTMessage(topic: "ble/\(id)/commands", text: json, qos: .atLeastOnce))
    }

    @Test func everyCommandIsAnsweredAgainstARadioPeer() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--id", "gwc"])
            _ = try await watcher.next("ble/gwc/status") { $0.text == "online" }
            let hrm = #""address":"F0:5E:B1:00:00:01""#
            func ask(_ id: String, _ body: String) async throws -> String {
                try Self.command(watcher, "gwc", #"{"id":"\#(id)",\#(body)}"#)
                // The Bumble peer shares two cores with the other test lanes: a connect with
                // discovery can take longer than the watcher's default 15 s there.
                return try await watcher.next("ble/gwc/responses/\(id)", timeout: .seconds(60)).text
            }

            #expect(try await ask("c", #""command":"connect",\#(hrm)"#) == #"{"id":"c","command":"connect","ok":true,"address":"F0:5E:B1:00:00:01"}"#)
            // "Virtual Sensors" in UTF-8.
            #expect(try await ask("r", #""command":"read",\#(hrm),"service":"180A","characteristic":"2A29""#)
                    == #"{"id":"r","command":"read","ok":true,"value":"5669727475616C2053656E736F7273"}"#)
            #expect(try await ask("w", #""command":"write",\#(hrm),"service":"180D","characteristic":"2A39","value":"01""#) == #"{"id":"w","command":"write","ok":true}"#)
            let refused = try await ask("w2", #""command":"write",\#(hrm),"service":"180D","characteristic":"2A39","value":"02""#)
            #expect(refused.hasPrefix(#"{"id":"w2","command":"write","ok":false,"error":{"code":"gatt","message":"#), "\(refused)")
            #expect(refused.contains("0x80"), "\(refused)")

            let topic = "ble/gwc/devices/F05EB1000001/180F/2A19"
            #expect(try await ask("s", #""command":"subscribe",\#(hrm),"service":"180F","characteristic":"2A19""#)
                    == #"{"id":"s","command":"subscribe","ok":true,"topic":"\#(topic)"}"#)
            // The peer's sequence starts at 100 (0x64) for the new subscription.
            #expect(try await watcher.next(topic).text == #"{"value":"64"}"#)
            #expect(try await ask("u", #""command":"unsubscribe",\#(hrm),"service":"180F","characteristic":"2A19""#)
                    == #"{"id":"u","command":"unsubscribe","ok":true,"topic":"\#(topic)"}"#)
            #expect(try await ask("u2", #""command":"unsubscribe",\#(hrm),"service":"180F","characteristic":"2A19""#)
                .hasPrefix(#"{"id":"u2","command":"unsubscribe","ok":false,"error":{"code":"notSubscribed","#))

            #expect(try await ask("off", #""command":"scan","enabled":false"#) == #"{"id":"off","command":"scan","ok":true,"scanning":false}"#)
            #expect(try await ask("on", #""command":"scan","enabled":true"#) == #"{"id":"on","command":"scan","ok":true,"scanning":true}"#)
            // Advertisements of the scenario's devices are published again once the scan runs.
            await watcher.clear()
            let advertised = try await watcher.next("ble/gwc/devices/F05EB1000003")
            #expect(advertised.text.hasPrefix(#"{"address":"F0:5E:B1:00:00:03","addressType":"random","state":"present","#), "\(advertised.text)")

            #expect(try await ask("d", #""command":"disconnect",\#(hrm)"#) == #"{"id":"d","command":"disconnect","ok":true,"address":"F0:5E:B1:00:00:01"}"#)
            #expect(try await ask("r2", #""command":"read",\#(hrm),"service":"180A","characteristic":"2A29""#)
                .hasPrefix(#"{"id":"r2","command":"read","ok":false,"error":{"code":"notConnected","#))
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            await watcher.stop()
        }
    }

    @Test func aDeviceThatKeepsDroppingItsLinkIsHeldAndNotifiesAgain() async throws {
        try await VirtualRadio.with(scenario: "flaky") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")
            let (file, dir) = try Self.config(#"""
                {"id": "gwf", "scan": {"enabled": false}, "devices": [{"address": "F0:5E:B1:00:00:11", "addressType": "random",
                 "subscribe": [{"service": "180F", "characteristic": "2A19"}],
                 "reconnect": {"maxAttempts": null, "initialDelaySeconds": 0.1, "maximumDelaySeconds": 1}}]}
                """#)
            defer { try? FileManager.default.removeItem(at: dir) }
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--config", file.path])
            let topic = "ble/gwf/devices/F05EB1000011/180F/2A19"
            #expect(try await watcher.next("ble/gwf/devices/F05EB1000011/link").text == #"{"state":"connected"}"#)
            // Each link lasts 3 s: 100 (0x64) after 1 s, 99 (0x63) after 2 s, then the peer ends
            // it. A 0x64 after a 0x63 comes from a new subscription: three links in a row, made
            // and subscribed again by the gateway with nothing from the app.
            for link in 1...3 {
                _ = try await watcher.next(topic, timeout: .seconds(30)) { $0.text == #"{"value":"64"}"# }
                await watcher.clear()
                guard link < 3 else { break }
                _ = try await watcher.next(topic, timeout: .seconds(30)) { $0.text == #"{"value":"63"}"# }
                await watcher.clear()
            }
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            await watcher.stop()
        }
    }

    @Test func aBrokerRestartWhileADeviceNotifiesLosesNoValue() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#", clientID: "radio-restart-watcher")
            let (file, dir) = try Self.config(#"""
                {"id": "gwr", "scan": {"enabled": false}, "devices": [{"address": "F0:5E:B1:00:00:02", "addressType": "random",
                 "subscribe": [{"service": "6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "characteristic": "6E400006-B5A3-F393-E0A9-E50E24DCCA9E"}]}]}
                """#)
            defer { try? FileManager.default.removeItem(at: dir) }
            let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--config", file.path,
                                                                  "--reconnect-delay", "1", "--reconnect-max-delay", "1"])
            let topic = "ble/gwr/devices/F05EB1000002/6E400001-B5A3-F393-E0A9-E50E24DCCA9E/6E400006-B5A3-F393-E0A9-E50E24DCCA9E"
            // uint32 little endian: 5 is 05000000.
            _ = try await watcher.next(topic, timeout: .seconds(30)) { $0.text == #"{"value":"05000000"}"# }
            broker.stop()
            // The gateway warns when the broker goes, then again when its next attempt (1 s
            // later) is refused: the peer went on notifying meanwhile.
            let warnings = await Child.read(gateway.stderr, timeout: .seconds(20)) { $0.components(separatedBy: "MQTT: ").count > 2 }
            #expect(warnings.components(separatedBy: "MQTT: ").count > 2, "\(warnings)")
            try await broker.restart()
            // Every value up to 60 (6 s after the first) has arrived, those notified while the
            // broker was away included.
            let counter: @Sendable (String) -> Int? = { text in
                guard text.hasPrefix(#"{"value":""#), text.count == 20 else { return nil }
                return UInt32(String(text.dropFirst(10).prefix(8)), radix: 16).map { Int($0.byteSwapped) }
            }
            let last = try await watcher.next(topic, timeout: .seconds(30)) { m in (counter(m.text) ?? 0) >= 60 }
            #expect(counter(last.text) == 60)
            let values = Set(await watcher.on(topic).compactMap { counter($0.text) })
            let missing = (1...60).filter { !values.contains($0) }
            #expect(missing.isEmpty, "values lost across the broker restart: \(missing)")
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            await watcher.stop()
        }
    }
}
