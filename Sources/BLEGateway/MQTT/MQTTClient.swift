import CMosquitto
import Foundation
import Synchronization

/// An MQTT client over libmosquitto: libmosquitto's own thread (`mosquitto_loop_start`) runs
/// the network, reconnects with backoff after a drop, and reports through `events`.
///
/// The C callbacks run on that thread and only yield into an `AsyncStream` continuation
/// (itself thread-safe): no Swift state is shared with the network thread beyond that edge.
///
///     let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: 1883, clientID: "gw1"))
///     try client.start()
///     for await event in client.events { ... }
public final class MQTTClient: @unchecked Sendable { // `handle` is used only through libmosquitto calls, which are thread-safe in threaded mode
    public let options: MQTTOptions
    /// Connected, disconnected, delivered and message events, in the order the network thread saw them.
    public let events: AsyncStream<MQTTEvent>
    private let handle: OpaquePointer
    private let box: Unmanaged<EventSink>

    private static let libraryReady: Bool = { mosquitto_lib_init() == 0 }()

    /// Makes the client and applies the options (credentials, TLS, will, backoff). Nothing is
    /// sent until `start()`.
    public init(options: MQTTOptions) throws(MQTTError) {
        _ = Self.libraryReady
        self.options = options
        let (stream, continuation) = AsyncStream<MQTTEvent>.makeStream(bufferingPolicy: .unbounded)
        events = stream
        let sink = EventSink(continuation, broker: options.broker, version: options.protocolVersion)
        box = Unmanaged.passRetained(sink)
        guard let mosq = mosquitto_new(options.clientID, options.cleanSession, box.toOpaque()) else {
            box.release()
            throw MQTTError(operation: "mosquitto_new", code: errno, detail: String(cString: strerror(errno)))
        }
        handle = mosq
        do throws(MQTTError) {
            try check("mosquitto_int_option(PROTOCOL_VERSION)", mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, options.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311))
            try check("mosquitto_max_inflight_messages_set", mosquitto_max_inflight_messages_set(mosq, UInt32(max(1, options.maximumInflight))))
            let base = UInt32(max(1, options.reconnectDelay.components.seconds))
            let top = UInt32(max(Int64(base), options.reconnectMaximumDelay.components.seconds))
            try check("mosquitto_reconnect_delay_set", mosquitto_reconnect_delay_set(mosq, base, top, true))
            if let user = options.username {
                try check("mosquitto_username_pw_set", mosquitto_username_pw_set(mosq, user, options.password))
            }
            if let tls = options.tls {
                try check("mosquitto_tls_set(\(tls.caFile))", mosquitto_tls_set(mosq, tls.caFile, nil, tls.certFile, tls.keyFile, nil))
                if tls.insecure { try check("mosquitto_tls_insecure_set", mosquitto_tls_insecure_set(mosq, true)) }
            }
            if let will = options.will {
                try check("mosquitto_will_set(\(will.topic))", will.payload.withUnsafeBytes {
                    mosquitto_will_set(mosq, will.topic, Int32($0.count), $0.baseAddress, will.qos.rawValue, will.retain)
                })
            }
        } catch {
            mosquitto_destroy(mosq)
            box.release()
            throw error
        }
        mosquitto_connect_callback_set(mosq) { mosq, user, rc in
            guard let user else { return }
            let sink = Unmanaged<EventSink>.fromOpaque(user).takeUnretainedValue()
            if rc == 0 {
                // Connected: libmosquitto's log is not needed until the next failure (it formats
                // a line per packet while a log callback is set).
                mosquitto_log_callback_set(mosq, nil)
                sink.lastLoggedError.withLock { $0 = nil }
                sink.continuation.yield(.connected)
            } else {
                // MQTT 5 refusals carry a reason code (MQTT 5.0, 3.2.2.2), 3.1.1 a return code (3.2.2.3).
                sink.refused.store(true, ordering: .relaxed)
                let detail = sink.version == .v5 ? String(cString: mosquitto_reason_string(rc)) : String(cString: mosquitto_connack_string(rc))
                sink.continuation.yield(.disconnected(MQTTError(operation: "CONNACK", code: rc, detail: detail, broker: sink.broker)))
            }
        }
        mosquitto_disconnect_callback_set(mosq) { mosq, user, rc in
            guard let user else { return }
            let sink = Unmanaged<EventSink>.fromOpaque(user).takeUnretainedValue()
            mosquitto_log_callback_set(mosq, EventSink.log)
            // A refused CONNACK was reported with its reason; its disconnect says no more.
            if sink.refused.exchange(false, ordering: .relaxed) { return }
            sink.continuation.yield(.disconnected(MQTTError(operation: "link", code: rc, detail: String(cString: mosquitto_strerror(rc)), broker: sink.broker)))
        }
        // Until the first connection: keeps libmosquitto's error lines (the TLS reason).
        mosquitto_log_callback_set(mosq, EventSink.log)
        mosquitto_publish_callback_set(mosq) { _, user, mid in
            guard let user else { return }
            Unmanaged<EventSink>.fromOpaque(user).takeUnretainedValue().continuation.yield(.delivered(messageID: mid))
        }
        mosquitto_message_callback_set(mosq) { _, user, message in
            guard let user, let message, let topic = message.pointee.topic else { return }
            let length = Int(max(0, message.pointee.payloadlen))
            var payload: [UInt8] = []
            if length > 0, let bytes = message.pointee.payload {
                payload = Array(UnsafeRawBufferPointer(start: bytes, count: length))
            }
            let m = MQTTMessage(topic: String(cString: topic), payload: payload,
                                qos: MQTTQoS(rawValue: message.pointee.qos) ?? .atMostOnce, retain: message.pointee.retain)
            Unmanaged<EventSink>.fromOpaque(user).takeUnretainedValue().continuation.yield(.message(m))
        }
    }

    deinit {
        mosquitto_loop_stop(handle, true)
        mosquitto_destroy(handle)
        box.takeUnretainedValue().continuation.finish()
        box.release()
    }

    /// Starts the network thread and the first connection attempt. An unreachable broker is
    /// not an error here: the thread keeps trying with backoff and reports `.connected` once
    /// it is in.
    public func start() throws(MQTTError) {
        // The network thread starts first: libmosquitto 2.0 never retries a first connection
        // that failed (broker not up yet) when its thread started after mosquitto_connect_async.
        try check("mosquitto_loop_start", mosquitto_loop_start(handle))
        let rc = mosquitto_connect_async(handle, options.host, Int32(options.port), Int32(max(5, options.keepAlive.components.seconds)))
        // Refused or unreachable now: the loop retries. Bad arguments or a bad host name are final.
        if rc == MOSQ_ERR_INVAL.rawValue || rc == MOSQ_ERR_EAI.rawValue || rc == MOSQ_ERR_TLS.rawValue {
            mosquitto_loop_stop(handle, true)
            let logged = box.takeUnretainedValue().lastLoggedError.withLock { $0 }
            throw MQTTError(operation: "mosquitto_connect_async(\(options.broker))", code: rc,
                            detail: Self.text(rc) + (logged.map { ": \($0)" } ?? ""), broker: options.broker)
        }
    }

    /// Hands `message` to libmosquitto and returns its message id (see `.delivered`).
    /// Throws with `isNotConnected` while the broker is away; a QoS 1 message then still
    /// has its `messageID`, and libmosquitto sends it after the reconnect.
    @discardableResult
    public func publish(_ message: MQTTMessage) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let rc = message.payload.withUnsafeBytes {
            mosquitto_publish(handle, &mid, message.topic, Int32($0.count), $0.baseAddress, message.qos.rawValue, message.retain)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(operation: "mosquitto_publish(\(message.topic))", code: rc, detail: Self.text(rc), messageID: mid == 0 ? nil : mid)
        }
        return mid
    }

    /// Subscribes to `pattern` (MQTT wildcards allowed). Subscriptions do not survive a
    /// reconnect: subscribe again on `.connected`.
    public func subscribe(_ pattern: String, qos: MQTTQoS = .atLeastOnce) throws(MQTTError) {
        try check("mosquitto_subscribe(\(pattern))", mosquitto_subscribe(handle, nil, pattern, qos.rawValue))
    }

    public func unsubscribe(_ pattern: String) throws(MQTTError) {
        try check("mosquitto_unsubscribe(\(pattern))", mosquitto_unsubscribe(handle, nil, pattern))
    }

    /// Sends DISCONNECT (the broker then drops the will) and stops the network thread.
    public func stop() {
        _ = mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
    }

    private func check(_ operation: @autoclosure () -> String, _ rc: Int32) throws(MQTTError) {
        guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
        throw MQTTError(operation: operation(), code: rc, detail: Self.text(rc))
    }

    static func text(_ rc: Int32) -> String {
        rc == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
    }
}

/// What the C callbacks reach through libmosquitto's user data pointer.
private final class EventSink: Sendable {
    let continuation: AsyncStream<MQTTEvent>.Continuation
    let broker: String
    let version: MQTTProtocolVersion
    /// The last error line libmosquitto logged while not connected (OpenSSL's reason for a
    /// failed handshake); written on the network thread or the thread calling `start()`.
    let lastLoggedError = Mutex<String?>(nil)
    /// The last CONNACK refused the connection (its disconnect follows).
    let refused = Atomic<Bool>(false)

    init(_ continuation: AsyncStream<MQTTEvent>.Continuation, broker: String, version: MQTTProtocolVersion) {
        self.continuation = continuation
        self.broker = broker
        self.version = version
    }

    /// libmosquitto's log callback, set only while the client is not connected.
    static let log: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = { _, user, level, text in
        guard let user, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
        let line = String(cString: text)
        Unmanaged<EventSink>.fromOpaque(user).takeUnretainedValue().lastLoggedError.withLock { $0 = line }
    }
}
