import BLECore
import BLESensors
import FoundationEssentials
import GATTClient
import BLEWire
import BLETransport

/// Everything the gateway runs with: broker, gateway id, scanning, links. Built from a JSON
/// file (`GatewayConfig.decode`) and command-line flags, then checked with `validate()`.
///
///     var config = try GatewayConfig.decode(jsonFile)
///     config.id = "gw1"
///     try config.validate()
public struct GatewayConfig: Sendable, Hashable {
    /// Topic layout for advertisements.
    public enum Layout: String, Sendable, Hashable, CaseIterable {
        /// `ble/GWID/devices/<ADDRESS>`.
        case native
        /// OpenMQTTGateway's `home/GWID/BTtoMQTT/<ADDRESS>`.
        case openmqttgateway
        /// Both.
        case both
    }

    public struct Broker: Sendable, Hashable {
        /// `mqtt://HOST[:PORT]` or `mqtts://HOST[:PORT]`.
        public var url: String?
        public var username: String?
        /// The password as text: visible in `ps` when given as a flag; prefer `passwordFile`.
        public var password: String?
        /// A file holding the password (its text without a final line break); not with `password`.
        public var passwordFile: String?
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        /// Skips the check that the broker's certificate names the host (testing only).
        public var insecureTLS = false
        /// MQTT 3.1.1 (default) or 5.
        public var protocolVersion = MQTTProtocolVersion.v311
        /// Messages waiting for the broker at most; the oldest is dropped (and counted) beyond.
        public var queueCapacity = 10_000
        /// MQTT Keep Alive (5 to 65535 s); also how long an attempt may wait for the broker.
        public var keepAlive: Duration = .seconds(30)
        /// The first wait before a new broker connection attempt; it doubles up to `reconnectMaximumDelay`.
        public var reconnectDelay: Duration = .seconds(1)
        public var reconnectMaximumDelay: Duration = .seconds(30)
        public init() {}
    }

    public struct Scan: Sendable, Hashable {
        public var enabled = true
        public var passive = false
        /// An unchanged device is published again after this long at most once; a change goes out at once.
        public var publishInterval: Duration = .seconds(10)
        /// A device not heard for this long gets its `lost` message.
        public var lostAfter: Duration = .seconds(30)
        /// Take an encryption counter that went back below 100 as the sensor restarting it (a
        /// battery change) instead of a replay (``SensorDecoder/acceptsCounterRestart``).
        public var acceptCounterRestart = false
        public init() {}
    }

    /// A characteristic named by service and characteristic UUID.
    public struct CharacteristicRef: Sendable, Hashable {
        public var service: BluetoothUUID
        public var characteristic: BluetoothUUID
        public init(service: BluetoothUUID, characteristic: BluetoothUUID) {
            self.service = service
            self.characteristic = characteristic
        }
        public var identifier: CharacteristicIdentifier {
            CharacteristicIdentifier(uuid: characteristic, service: ServiceIdentifier(uuid: service))
        }
    }

    public struct PeriodicRead: Sendable, Hashable {
        public var characteristic: CharacteristicRef
        public var interval: Duration
        public init(characteristic: CharacteristicRef, interval: Duration) {
            self.characteristic = characteristic
            self.interval = interval
        }
    }

    /// How a configured link comes back after it drops or fails to connect.
    public struct Reconnect: Sendable, Hashable {
        /// nil: forever.
        public var maxAttempts: Int?
        public var initialDelay: Duration = .milliseconds(500)
        public var maximumDelay: Duration = .seconds(30)
        public init(maxAttempts: Int? = nil) { self.maxAttempts = maxAttempts }

        public var policy: ReconnectPolicy {
            .always(maxAttempts: maxAttempts, backoff: .exponential(initial: initialDelay, maximum: maximumDelay))
        }
    }

    /// A device the gateway holds a link to.
    public struct Device: Sendable, Hashable {
        public var address: LEAddress
        public var subscribe: [CharacteristicRef] = []
        public var read: [PeriodicRead] = []
        public var reconnect = Reconnect()
        /// The security level the link needs before anything else (nil: none asked): the
        /// bond from the gateway's bond store encrypts it, else the gateway pairs (Just
        /// Works) and keeps the new bond.
        public var security: SecurityLevel?
        public init(address: LEAddress) { self.address = address }
    }

    public var broker = Broker()
    public var id: String?
    public var topicPrefix = "ble"
    public var layout = Layout.native
    public var scan = Scan()
    public var metricsInterval: Duration = .seconds(30)
    public var homeAssistantDiscovery = false
    public var devices: [Device] = []
    /// Bindkeys of encrypted BTHome and MiBeacon sensors, 16 bytes each; never published or logged.
    public var keys = SensorKeys()
    /// The fleet this gateway is one of (nil: a gateway on its own, topics under its id only).
    public var fleet: Fleet?

    public init() {}

    /// Checks what the file and flags together must give: a broker URL, a gateway id fit for a
    /// topic level, positive intervals. Throws the first mistake, naming its key.
    public func validate() throws(ConfigError) {
        guard let url = broker.url else { throw ConfigError(key: "mqtt.url", "missing; give --mqtt mqtt://HOST:PORT or \"mqtt\": {\"url\": ...}") }
        _ = try BrokerURL(url)
        guard let id, !id.isEmpty else { throw ConfigError(key: "id", "missing; give --id GWID or \"id\" in the config") }
        try Self.checkTopicLevel(id, key: "id")
        try Self.checkTopicLevel(topicPrefix, key: "topicPrefix")
        if broker.queueCapacity < 1 { throw ConfigError(key: "mqtt.queueCapacity", "must be at least 1, got \(broker.queueCapacity)") }
        try checkBrokerTimes()
        try validateFleet()
        if broker.passwordFile != nil {
            if broker.password != nil { throw ConfigError(key: "mqtt.passwordFile", "give password or passwordFile, not both") }
            _ = try passwordFromFile()
        }
        if scan.publishInterval < .zero { throw ConfigError(key: "scan.publishIntervalSeconds", "must not be negative") }
        if scan.lostAfter <= .zero { throw ConfigError(key: "scan.lostAfterSeconds", "must be more than 0") }
        if metricsInterval <= .zero { throw ConfigError(key: "metricsIntervalSeconds", "must be more than 0") }
        if (broker.certFile == nil) != (broker.keyFile == nil) {
            throw ConfigError(key: broker.certFile == nil ? "mqtt.certFile" : "mqtt.keyFile", "a client certificate needs both certFile and keyFile")
        }
        var seen: Set<LEAddress> = []
        for (i, d) in devices.enumerated() {
            if !seen.insert(d.address).inserted { throw ConfigError(key: "devices[\(i)].address", "\(d.address) is listed twice") }
            for (j, r) in d.read.enumerated() where r.interval <= .zero {
                throw ConfigError(key: "devices[\(i)].read[\(j)].intervalSeconds", "must be more than 0")
            }
        }
    }

    /// Keep Alive is a 16-bit number of seconds (MQTT 3.1.1, 3.1.2.10) and libmosquitto
    /// takes no less than 5; the backoff must not start above its maximum.
    func checkBrokerTimes() throws(ConfigError) {
        if broker.keepAlive < .seconds(5) || broker.keepAlive > .seconds(65_535) {
            throw ConfigError(key: "mqtt.keepAliveSeconds", "must be from 5 to 65535 seconds, got \(Self.secondsText(broker.keepAlive))")
        }
        if broker.reconnectDelay <= .zero { throw ConfigError(key: "mqtt.reconnectDelaySeconds", "must be more than 0") }
        if broker.reconnectMaximumDelay < broker.reconnectDelay {
            throw ConfigError(key: "mqtt.reconnectMaximumDelaySeconds",
                              "\(Self.secondsText(broker.reconnectMaximumDelay)) is less than the first delay (reconnectDelaySeconds, \(Self.secondsText(broker.reconnectDelay)))")
        }
    }

    static func secondsText(_ d: Duration) -> String {
        let s = Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        return s == s.rounded() ? "\(Int64(s)) s" : "\(s) s"
    }

    /// The text of `broker.passwordFile` without a final line break; at most 65535 bytes
    /// (an MQTT password's limit), so a wrong path to a large file is a mistake, not a read.
    func passwordFromFile() throws(ConfigError) -> String {
        let path = broker.passwordFile ?? ""
        let data: [UInt8]
        do { data = try FileBytes.read(path, atMost: 65_537) } catch {
            throw ConfigError(key: "mqtt.passwordFile", "cannot read \(path): \(error.reason); check the path and that the gateway's user may read it")
        }
        var text = String(decoding: data, as: UTF8.self)
        // "\r\n" is one Character: removeLast takes either line break whole.
        if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
        if text.utf8.count > 65_535 { throw ConfigError(key: "mqtt.passwordFile", "\(path) holds more than 65535 bytes; an MQTT password is at most that") }
        if text.isEmpty { throw ConfigError(key: "mqtt.passwordFile", "\(path) is empty; write the password into it") }
        return text
    }

    static func checkTopicLevel(_ s: String, key: String) throws(ConfigError) {
        if s.isEmpty || s.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" || $0.isWhitespace }) {
            throw ConfigError(key: key, "\"\(s)\" cannot be an MQTT topic level (no '/', '+', '#', spaces, not empty)")
        }
    }

    /// The client options for this config: host, port, TLS, credentials, will `offline`.
    public func mqttOptions() throws(ConfigError) -> MQTTOptions {
        let url = try BrokerURL(broker.url ?? "")
        var o = MQTTOptions(host: url.host, port: url.port, clientID: "ble-gateway-\(id ?? "")")
        o.username = broker.username
        o.password = try broker.passwordFile == nil ? broker.password : passwordFromFile()
        if url.tls || broker.caFile != nil {
            o.tls = MQTTTLSOptions(caFile: broker.caFile ?? "/etc/ssl/certs/ca-certificates.crt", certFile: broker.certFile,
                                   keyFile: broker.keyFile, insecure: broker.insecureTLS)
        }
        o.protocolVersion = broker.protocolVersion
        o.keepAlive = broker.keepAlive
        o.reconnectDelay = broker.reconnectDelay
        o.reconnectMaximumDelay = broker.reconnectMaximumDelay
        o.will = MQTTMessage(topic: topics.status, text: "offline", qos: .atLeastOnce, retain: true)
        return o
    }

    public var topics: GatewayTopics { GatewayTopics(prefix: topicPrefix, gatewayID: id ?? "") }
}

/// A mistake in the config file or flags: the key and what is wrong, on one line.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// "scan.lostAfterSeconds", "devices[1].subscribe[0].service".
    public var key: String
    public var problem: String

    public init(key: String, _ problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "config: \(key): \(problem)" }
}

/// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883, TLS).
public struct BrokerURL: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(_ text: String) throws(ConfigError) {
        let bad = ConfigError(key: "mqtt.url", "\"\(text)\" is not mqtt://HOST[:PORT] or mqtts://HOST[:PORT]")
        let rest: Substring
        if text.hasPrefix("mqtt://") { rest = text.dropFirst(7); tls = false }
        else if text.hasPrefix("mqtts://") { rest = text.dropFirst(8); tls = true }
        else { throw bad }
        let hostPort = rest.hasSuffix("/") ? rest.dropLast() : rest
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else { throw bad }
            host = String(hostPort[..<colon])
            port = p
        } else {
            host = String(hostPort)
            port = tls ? 8883 : 1883
        }
        host = host.trimmingPrefix("[").description
        if host.hasSuffix("]") { host.removeLast() }
        guard !host.isEmpty, !host.contains("/") else { throw bad }
    }
}
