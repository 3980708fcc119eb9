import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// The gateway's connection to a real mosquitto: MQTT 5 and a password file.
@Suite(.serialized) struct BrokerConnectionTests {
    /// Flags (LE General Discoverable, BR/EDR not supported); Complete Local Name "Tag"
    /// (Core Specification Supplement, Part A, 1.3 and 1.2).
    static let tag = SimulatedPeripheral(address: LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_31), type: .random),
                                         advertisingData: [0x02, 0x01, 0x06, 0x04, 0x09, 0x54, 0x61, 0x67], rssi: -50)
    static let tagTopic = "ble/gw/devices/C01122334431"

    /// The first `.disconnected` error of a client with `options` (bounded: 15 s).
    static func firstFailures(_ options: MQTTOptions, count: Int) async throws -> [(MQTTError, ContinuousClock.Instant)] {
        let client = try MQTTClient(options: options)
        try client.start()
        defer { client.stop() }
        do {
            return try await bounded(within: 15) {
                var seen: [(MQTTError, ContinuousClock.Instant)] = []
                for await event in client.events {
                    if case .disconnected(let e) = event { seen.append((e, .now)) }
                    if case .connected = event { Issue.record("connected with \(options)") }
                    if seen.count == count { return seen }
                }
                return seen
            }
        } catch is StillRunning {
            throw Watcher.Timeout(description: "fewer than \(count) connection failures within 15 s")
        }
    }

    /// An integer field of a metrics message (-1 when absent).
    static func counter(_ m: MQTTMessage, _ key: String) -> Int {
        ((try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any])?[key] as? Int ?? -1
    }

    @Test func mqtt5GatewayIsOnlineAndPublishesDevices() async throws {
        let secrets = try BrokerSecrets.make()
        try await secrets.writePasswords(["hall": "secret", "watcher": "w"])
        let broker = try await Broker.start(settings: "allow_anonymous false\npassword_file \(secrets.passwordFile)")
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#") { $0.username = "watcher"; $0.password = "w" }
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.tag]) { c in
            c.broker.protocolVersion = .v5
            c.broker.username = "hall"
            c.broker.password = "secret"
        }
        #expect(try await watcher.next("ble/gw/status").text == "online")
        let tag = try await watcher.next(Self.tagTopic)
        #expect(tag.text.hasPrefix(#"{"address":"C0:11:22:33:44:31","addressType":"random","state":"present","name":"Tag","rssi":-50"#), "\(tag.text)")
        await bed.stop()

        // The version reaches the broker: refused, an MQTT 5 client gets the CONNACK reason
        // code Not authorized 0x87 (MQTT 5.0, 3.2.2.2), a 3.1.1 client the return code 5
        // (MQTT 3.1.1, 3.2.2.3).
        var options = MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "v5-refused")
        options.username = "hall"
        options.password = "wrong"
        options.protocolVersion = .v5
        let v5 = try await Self.firstFailures(options, count: 1)
        #expect(v5.first?.0.operation == "CONNACK" && v5.first?.0.code == 0x87, "\(v5.map(\.0))")
        #expect(v5.first?.0.detail == "Not authorized", "\(v5.map(\.0))")
        options.protocolVersion = .v311
        let v311 = try await Self.firstFailures(options, count: 1)
        #expect(v311.first?.0.operation == "CONNACK" && v311.first?.0.code == 5, "\(v311.map(\.0))")
        await watcher.stop()
    }

    /// Refused with either version (MQTT 5: libmosquitto's own network thread would end after
    /// the refusal), the gateway tries again after its backoff, logs the refusal once, counts
    /// every failed attempt in its metrics, and is in once the broker knows the password.
    @Test(arguments: [MQTTProtocolVersion.v311, .v5])
    func credentialsAreCheckedAndAWrongPasswordIsRetriedWithBackoff(version: MQTTProtocolVersion) async throws {
        let secrets = try BrokerSecrets.make()
        try await secrets.writePasswords(["hall": "old", "watcher": "w"])
        let broker = try await Broker.start(settings: "allow_anonymous false\npassword_file \(secrets.passwordFile)")
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#") { $0.username = "watcher"; $0.password = "w" }

        // Wrong password: one line naming the broker and the reason, again after the backoff.
        var config = GatewayConfig()
        config.broker.url = broker.url
        config.id = "gw"
        config.broker.username = "hall"
        config.broker.password = "secret"
        config.broker.protocolVersion = version
        config.broker.reconnectDelay = .seconds(1)
        config.broker.reconnectMaximumDelay = .seconds(1)
        var options = try config.mqttOptions()
        options.clientID = "refused-probe"
        let failures = try await Self.firstFailures(options, count: 2)
        let refused = try #require(failures.first?.0)
        // MQTT 3.1.1 return code 5 (3.2.2.3); MQTT 5 reason code 0x87 Not authorized (3.2.2.2).
        let reason = version == .v5 ? "CONNACK code 135: Not authorized" : "CONNACK code 5: Connection Refused: not authorised."
        #expect(refused.operation == "CONNACK" && refused.code == (version == .v5 ? 0x87 : 5) && refused.broker == "127.0.0.1:\(broker.port)")
        #expect(refused.description == "the MQTT broker 127.0.0.1:\(broker.port) refused the connection (\(reason)); check the client id, username and password; retrying with backoff")
        #expect(!refused.description.contains("\n"))
        #expect(failures[1].0 == refused)
        #expect(failures[1].1 - failures[0].1 >= .milliseconds(900), "the second attempt came without the backoff")

        // The gateway keeps trying; once the broker knows the password it is in.
        let logs = LogLines()
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.tag], logger: logs.logger) { c in
            c.broker.protocolVersion = version
            c.broker.username = "hall"
            c.broker.password = "secret"
            c.metricsInterval = .milliseconds(200)
        }
        let publisher = bed.gateway.publisher
        #expect(await publisher.waitForConnectFailures(moreThan: 1, timeout: .seconds(15)), "no second attempt after the refusal")
        #expect(await publisher.lastError?.operation == "CONNACK")
        // Logged once, not at every attempt (the log interval is 60 s).
        #expect(logs.all.filter { $0.hasPrefix("MQTT: the MQTT broker") }.count == 1, "\(logs.all)")
        try await secrets.writePasswords(["hall": "secret", "watcher": "w"])
        broker.signal(SIGHUP) // mosquitto reads its password file again
        #expect(try await watcher.next("ble/gw/status").text == "online")
        #expect(try await watcher.next(Self.tagTopic).text.contains(#""name":"Tag""#))
        // Metrics made while refused wait in the queue; a later one counts both refusals.
        let metrics = try await watcher.next("ble/gw/metrics") { Self.counter($0, "connectFailures") >= 2 }
        #expect(Self.counter(metrics, "reconnects") == 0, "\(metrics.text)")
        await bed.stop()
        await watcher.stop()
    }

    /// A broker that is not up when the client starts: the client keeps trying and connects
    /// once the broker listens.
    @Test func aBrokerThatComesUpLaterIsConnectedTo() async throws {
        let port = try Broker.freePort()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientID: "early"))
        try client.start()
        defer { client.stop() }
        let broker = try await bounded(within: 30) { () async throws -> Broker? in
            var broker: Broker?
            for await event in client.events {
                switch event {
                case .disconnected where broker == nil:
                    // The first attempt failed while nothing listened: bring the broker up.
                    broker = try await Broker.start(port: port)
                case .connected:
                    return broker
                default:
                    continue
                }
            }
            broker?.stop()
            return nil
        }
        defer { broker?.stop() }
        #expect(broker != nil, "a refused first attempt, then connected within 30 s of the broker coming up on \(port)")
    }
}
