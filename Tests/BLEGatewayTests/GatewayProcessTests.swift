import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// The `ble gateway` process against the Bumble virtual radio (scenario "all") and a real
/// mosquitto: status and last will on a clean stop (SIGTERM) and on SIGKILL, and a bad config.
@Suite(.serialized) struct GatewayProcessTests {
    /// The package root, from this file's path (Tests/BLEGatewayTests/GatewayProcessTests.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `ble` next to the test bundle, else .build/debug/ble.
    static var ble: String {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("ble"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("ble"),
            packageRoot.appendingPathComponent(".build/debug/ble"),
        ]
        return (candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[2]).path
    }

    /// Runs `ble gateway` until it says it is up (its status line), on `radio`, to `broker`.
    static func startGateway(_ radio: VirtualRadio, _ broker: Broker, id: String) async throws -> Child {
        let child = try Child(path: ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--id", id, "--publish-interval", "1"])
        return child
    }

    @Test func cleanStopPublishesOfflineAndSIGKILLLeavesTheWill() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")

            // Clean stop: SIGTERM → `offline` (retained), exit 0 within a few seconds.
            let gateway = try await Self.startGateway(radio, broker, id: "gwp")
            let online = try await watcher.next("ble/gwp/status") { $0.text == "online" }
            #expect(online.qos == .atLeastOnce)
            // The battery device of the scenario (F0:5E:B1:00:00:03) advertises the Battery service.
            let battery = try await watcher.next("ble/gwp/devices/F05EB1000003")
            #expect(battery.text.hasPrefix(#"{"address":"F0:5E:B1:00:00:03","addressType":"random","state":"present","#), "\(battery.text)")
            #expect(battery.text.contains(#""services":["180F"]"#), "\(battery.text)")
            let stopping = ContinuousClock.now
            gateway.signal(SIGTERM)
            let status = await gateway.waitForExit(timeout: .seconds(10))
            #expect(status == 0)
            #expect(ContinuousClock.now - stopping < .seconds(5))
            _ = try await watcher.next("ble/gwp/status") { $0.text == "offline" }
            // Retained: a client subscribing now is told `offline` at once.
            let late = try await Watcher.start(broker, "ble/gwp/status")
            let retained = try await late.next("ble/gwp/status")
            #expect(retained.text == "offline" && retained.retain)
            await late.stop()

            // SIGKILL: the broker publishes the will `offline` when the connection drops.
            let killed = try await Self.startGateway(radio, broker, id: "gwk")
            _ = try await watcher.next("ble/gwk/status") { $0.text == "online" }
            killed.signal(SIGKILL)
            #expect(await killed.waitForExit(timeout: .seconds(5)) == 128 + SIGKILL)
            _ = try await watcher.next("ble/gwk/status") { $0.text == "offline" }
            await watcher.stop()
        }
    }

    @Test func sighupReloadsTheConfigAndHoldsTheNewLink() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwhup-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("gateway.json")
            try #"{"id": "gwh", "scan": {"enabled": false}}"#.write(to: file, atomically: true, encoding: .utf8)
            let gateway = try Child(path: Self.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--config", file.path])
            _ = try await watcher.next("ble/gwh/status") { $0.text == "online" }
            // A broken config is not taken: one line naming the key, and the gateway runs on.
            try #"{"id": "gwh", "scan": {"enabled": "no"}}"#.write(to: file, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let refused = await Child.read(gateway.stderr, timeout: .seconds(10)) { text in
                text.components(separatedBy: "SIGHUP: config not reloaded").dropFirst().first?.contains("\n") == true
            }
            let line = refused.split(separator: "\n").first { $0.contains("SIGHUP: config not reloaded") }.map(String.init) ?? ""
            #expect(line.contains("scan.enabled: expected"), "\(refused)")
            // The battery device of the scenario: Battery Level (2A19) is readable.
            try #"""
            {"id": "gwh", "scan": {"enabled": false},
             "devices": [{"address": "F0:5E:B1:00:00:03", "read": [{"service": "180F", "characteristic": "2A19", "intervalSeconds": 60}]}]}
            """#.write(to: file, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let link = try await watcher.next("ble/gwh/devices/F05EB1000003/link", timeout: .seconds(30))
            #expect(link.text == #"{"state":"connected"}"#)
            let level = try await watcher.next("ble/gwh/devices/F05EB1000003/180F/2A19", timeout: .seconds(30))
            #expect(level.text.hasPrefix(#"{"value":""#))
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            _ = try await watcher.next("ble/gwh/status") { $0.text == "offline" }
            await watcher.stop()
            // SIGTERM closed the link from this side: the device saw Remote User Terminated
            // Connection (0x13), not a supervision timeout (the radio's log, complete once it
            // has exited).
            radio.stop()
            #expect(radio.recentLog.contains("battery: disconnected (handle 0x") && radio.recentLog.contains("reason 0x13)"), "\(radio.recentLog)")
        }
    }

    /// SIGHUP with the device removed from the config and scanning turned on in
    /// OpenMQTTGateway's layout: the link ends (`disconnected` on its link topic, Remote User
    /// Terminated Connection, 0x13, at the device, which then advertises again), its
    /// once-a-second reads stop, the metrics count no link, and advertisements go to
    /// `home/GWID/BTtoMQTT/<ADDRESS>` only.
    @Test func sighupRemovesADeviceAndChangesTheLayout() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "#")
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwhup-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("gateway.json")
            try #"""
            {"id": "gwr", "scan": {"enabled": false}, "metricsIntervalSeconds": 2,
             "devices": [{"address": "F0:5E:B1:00:00:03", "read": [{"service": "180F", "characteristic": "2A19", "intervalSeconds": 1}]}]}
            """#.write(to: file, atomically: true, encoding: .utf8)
            let gateway = try Child(path: Self.ble, ["-d", radio.transportSpec, "gateway", "--mqtt", broker.url, "--config", file.path])
            let link = "ble/gwr/devices/F05EB1000003/link", level = "ble/gwr/devices/F05EB1000003/180F/2A19"
            #expect(try await watcher.next(link, timeout: .seconds(30)).text == #"{"state":"connected"}"#)
            _ = try await watcher.next(level, timeout: .seconds(30))
            // A second read a second later: the reads run.
            await watcher.clear()
            _ = try await watcher.next(level, timeout: .seconds(10))
            try #"{"id": "gwr", "scan": {"enabled": true}, "layout": "openmqttgateway", "metricsIntervalSeconds": 2}"#
                .write(to: file, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let ended = try await watcher.next(link, timeout: .seconds(15))
            #expect(ended.text == #"{"state":"disconnected"}"#)
            // Scanning follows in the new layout: the heart-rate monitor on OpenMQTTGateway's topic.
            let omg = try await watcher.next("home/gwr/BTtoMQTT/F05EB1000001", timeout: .seconds(30))
            #expect(omg.text.contains(#""id":"F0:5E:B1:00:00:01""#), "\(omg.text)")
            // The battery device advertises again: Bumble restarts its advertising once the link is gone.
            _ = try await watcher.next("home/gwr/BTtoMQTT/F05EB1000003", timeout: .seconds(30))
            // From the link's end on, two metrics periods (2 s each) without a value.
            var seen = await watcher.takeAll()
            seen = Array(seen.drop { !($0.topic == link && $0.text == ended.text) })
            _ = try await watcher.next("ble/gwr/metrics", timeout: .seconds(10))
            seen += await watcher.takeAll()
            let metrics = try await watcher.next("ble/gwr/metrics", timeout: .seconds(10))
            seen += await watcher.takeAll()
            #expect(seen.first?.topic == link)
            #expect(!seen.contains { $0.topic == level }, "\(seen.map { "\($0.topic)=\($0.text)" })")
            #expect(metrics.text.contains(#""links":0,"#), "\(metrics.text)")
            // No native device message in OpenMQTTGateway's layout.
            #expect(!seen.contains { $0.topic == "ble/gwr/devices/F05EB1000001" })
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
            await watcher.stop()
            // The link ended from this side at the reload, not at the exit.
            radio.stop()
            #expect(radio.recentLog.contains("battery: disconnected (handle 0x") && radio.recentLog.contains("reason 0x13)"), "\(radio.recentLog)")
        }
    }

    @Test func badConfigsAreOneLineNamingTheKeyAndExit2() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwconf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("bad.json")
        try #"{"scan": {"lostAfterSeconds": "ten"}}"#.write(to: file, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--config", file.path],
             "config: scan.lostAfterSeconds: expected a number"),
            (["gateway", "--mqtt", "http://127.0.0.1", "--id", "gw"],
             #"config: --mqtt: "http://127.0.0.1" is not mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"#),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1883"],
             "config: id: missing; give --id GWID or \"id\" in the config"),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--keep-alive", "2"],
             "config: --keep-alive: must be from 5 to 65535 seconds, got 2 s"),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--keep-alive", "often"],
             #"config: --keep-alive: needs a number of seconds from 0 to 86400, not "often""#),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--reconnect-delay", "0"],
             "config: --reconnect-delay: must be more than 0"),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--reconnect-delay", "5", "--reconnect-max-delay", "2.5"],
             "config: --reconnect-max-delay: 2.5 s is less than the first delay (reconnectDelaySeconds, 5 s)"),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--password-file", "/nonexistent/pw"],
             "config: --password-file: cannot read /nonexistent/pw: No such file or directory; check the path and that the gateway's user may read it"),
            (["gateway", "--mqtt", "mqtt://127.0.0.1:1", "--id", "gw", "--password", "pw", "--password-file", file.path],
             "config: --password-file: give --password or --password-file, not both"),
        ]
        for (arguments, line) in cases {
            let child = try Child(path: Self.ble, arguments)
            #expect(await child.waitForExit(timeout: .seconds(20)) == 2)
            // The child has exited, so all it wrote is in the pipe: read up to its last newline
            // rather than wait for the end of the pipe.
            let text = await Child.read(child.stderr, timeout: .seconds(20)) { $0.hasSuffix("\n") }
            let lines = text.split(separator: "\n")
            #expect(lines.count == 1, "\(text)")
            #expect(lines.first.map { $0.hasSuffix(line) } == true, "\(text)")
        }
    }
}
