/// MQTT quality of service (MQTT 3.1.1, 4.3).
public enum MQTTQoS: Int32, Sendable, Hashable, Codable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2
}

/// One application message: topic, payload, QoS and the retain flag.
///
///     let m = MQTTMessage(topic: "ble/gw1/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
public struct MQTTMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: MQTTQoS = .atMostOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }

    /// The payload as UTF-8 text (invalid sequences repaired).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// TLS towards the broker: the CA to trust, an optional client certificate.
public struct MQTTTLSOptions: Sendable, Hashable {
    public var caFile: String
    public var certFile: String?
    public var keyFile: String?
    /// Skips the check that the broker's certificate names the host (testing only).
    public var insecure: Bool

    public init(caFile: String, certFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
    }
}

/// The MQTT protocol version the client speaks (set before the connection).
public enum MQTTProtocolVersion: String, Sendable, Hashable, CaseIterable {
    /// MQTT 3.1.1 (the default).
    case v311 = "3.1.1"
    /// MQTT 5.0: a refused connection carries a reason code (MQTT 5.0, 3.2.2.2).
    case v5 = "5"
}

/// Where and how the client connects.
///
///     var o = MQTTOptions(host: "127.0.0.1", port: 1883, clientID: "gw1")
///     o.will = MQTTMessage(topic: "ble/gw1/status", text: "offline", qos: .atLeastOnce, retain: true)
public struct MQTTOptions: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var clientID: String
    public var username: String?
    public var password: String?
    public var tls: MQTTTLSOptions?
    public var will: MQTTMessage?
    public var keepAlive: Duration
    /// Reconnect backoff: the first delay, doubled after each failed attempt up to the maximum.
    public var reconnectDelay: Duration
    public var reconnectMaximumDelay: Duration
    /// PUBLISH packets in flight (sent, not yet acknowledged) at most.
    public var maximumInflight: Int
    /// False: the broker keeps this client's subscriptions and queues its QoS 1 messages while
    /// it is away (MQTT 3.1.1, 3.1.2.4).
    public var cleanSession = true
    /// MQTT 3.1.1 (default) or 5.
    public var protocolVersion = MQTTProtocolVersion.v311

    /// "HOST:PORT", as errors name the broker.
    public var broker: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public init(host: String, port: Int = 1883, clientID: String) {
        self.host = host
        self.port = port
        self.clientID = clientID
        keepAlive = .seconds(30)
        reconnectDelay = .seconds(1)
        reconnectMaximumDelay = .seconds(30)
        maximumInflight = 100
    }
}

/// What the client's network thread reports.
public enum MQTTEvent: Sendable, Hashable {
    /// CONNACK accepted: the session is up (again).
    case connected
    /// The broker refused the connection (CONNACK return code), the TLS handshake failed, no
    /// connection could be made, or the link dropped; the client tries again with backoff
    /// unless it was stopped.
    case disconnected(MQTTError)
    /// The PUBLISH with this message id is done: acknowledged (QoS 1, 2) or written (QoS 0).
    case delivered(messageID: Int32)
    /// A message on a subscribed topic.
    case message(MQTTMessage)
}

/// A libmosquitto failure, with the call, its code and the library's own text.
public struct MQTTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The libmosquitto call that failed, or what did: "CONNACK" (the broker refused), "link"
    /// (the connection ended), "connect" (no connection was made), "TLS" (the handshake failed),
    /// "start" (the client's network thread already runs).
    public var operation: String
    /// "HOST:PORT" of the broker, when the failure concerns it.
    public var broker: String?
    /// MOSQ_ERR_* value, or the CONNACK return code (MQTT 5: reason code) for "CONNACK".
    public var code: Int32
    public var detail: String
    /// The message id libmosquitto gave the message of a failed `publish` (it keeps a QoS 1
    /// message it could not send yet and sends it after the reconnect).
    public var messageID: Int32?

    public init(operation: String, code: Int32, detail: String, messageID: Int32? = nil, broker: String? = nil) {
        self.operation = operation
        self.broker = broker
        self.code = code
        self.detail = detail
        self.messageID = messageID
    }

    /// The client is not connected to the broker (MOSQ_ERR_NO_CONN).
    public var isNotConnected: Bool { operation != "CONNACK" && code == 4 }

    /// The TLS handshake with the broker failed (`detail` is OpenSSL's reason).
    public var isTLSFailure: Bool { operation == "TLS" }

    public var description: String {
        let name = broker.map { "the MQTT broker \($0)" } ?? "the MQTT broker"
        switch operation {
        case "CONNACK":
            return "\(name) refused the connection (CONNACK code \(code): \(detail)); check the client id, username and password; retrying with backoff"
        case "link":
            return "the connection to \(name) ended (code \(code): \(detail)); reconnecting with backoff"
        case "connect":
            return "could not connect to \(name) (code \(code): \(detail)); check the broker address and port; retrying with backoff"
        case "TLS":
            return "TLS with \(name) failed (\(detail)); check that the CA file (mqtt.caFile, --ca-file) signed the broker's certificate, that the certificate names the host, and the client certificate (mqtt.certFile, mqtt.keyFile) if the broker asks for one; retrying with backoff"
        case "start":
            return "the MQTT client of \(name) was not started: \(detail)"
        case _ where code == 8: // MOSQ_ERR_TLS
            return "TLS with \(name) failed (\(operation): \(detail)); check that the CA file (mqtt.caFile, --ca-file) signed the broker's certificate and that the certificate names the host"
        default:
            return "\(operation) failed (code \(code): \(detail)); check the broker address, TLS files and credentials"
        }
    }
}
