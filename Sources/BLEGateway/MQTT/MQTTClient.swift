import CMosquitto
import Glibc
import Synchronization

/// An MQTT client over libmosquitto: a network thread of its own runs libmosquitto's loop,
/// connects again with backoff after a drop, a refusal or a failed TLS handshake, and reports
/// through `events`.
///
/// The C callbacks run on that thread and only yield into an `AsyncStream` continuation
/// (itself thread-safe): no Swift state is shared with the network thread beyond that edge
/// and a few atomics.
///
///     let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: 1883, clientID: "gw1"))
///     try client.start()
///     for await event in client.events { ... }
public final class MQTTClient: Sendable {
    public let options: MQTTOptions
    /// Connected, disconnected, delivered and message events, in the order the network thread saw them.
    public let events: AsyncStream<MQTTEvent>
    private let session: MosquittoSession
    private var handle: OpaquePointer { session.handle }
    /// The network thread of the last `start()`; read by `stop()` and `deinit` (not on the data path).
    private let loop = Mutex<MQTTNetworkLoop?>(nil)

    private static let libraryReady: Bool = { mosquitto_lib_init() == 0 }()

    /// Makes the client and applies the options (credentials, TLS, will, backoff). Nothing is
    /// sent until `start()`.
    public init(options: MQTTOptions) throws(MQTTError) {
        _ = Self.libraryReady
        self.options = options
        let (stream, continuation) = AsyncStream<MQTTEvent>.makeStream(bufferingPolicy: .unbounded)
        events = stream
        let sink = MQTTEventSink(continuation, broker: options.broker, version: options.protocolVersion, tls: options.tls != nil)
        // The session owns the sink, so the user data pointer lives as long as the handle.
        guard let mosq = mosquitto_new(options.clientID, options.cleanSession, Unmanaged.passUnretained(sink).toOpaque()) else {
            throw MQTTError(operation: "mosquitto_new", code: errno, detail: String(cString: strerror(errno)))
        }
        session = MosquittoSession(handle: mosq, sink: sink)
        // The network thread is the client's own (MQTTNetworkLoop): libmosquitto locks its
        // state for calls from other threads.
        try check("mosquitto_threaded_set", mosquitto_threaded_set(mosq, true))
        try check("mosquitto_int_option(PROTOCOL_VERSION)", mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, options.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311))
        try check("mosquitto_max_inflight_messages_set", mosquitto_max_inflight_messages_set(mosq, UInt32(max(1, options.maximumInflight))))
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
        mosquitto_connect_callback_set(mosq) { mosq, user, rc in
            guard let user else { return }
            let sink = Unmanaged<MQTTEventSink>.fromOpaque(user).takeUnretainedValue()
            if rc == 0 {
                // Connected: libmosquitto's log is not needed until the next failure (it formats
                // a line per packet while a log callback is set).
                mosquitto_log_callback_set(mosq, nil)
                sink.lastLoggedError.withLock { $0 = nil }
                sink.isUp.store(true, ordering: .relaxed)
                sink.wasUp.store(true, ordering: .relaxed)
                sink.continuation.yield(.connected)
            } else {
                // MQTT 5 refusals carry a reason code (MQTT 5.0, 3.2.2.2), 3.1.1 a return code (3.2.2.3).
                sink.refused.store(true, ordering: .relaxed)
                let detail = sink.version == .v5 ? String(cString: mosquitto_reason_string(rc)) : String(cString: mosquitto_connack_string(rc))
                sink.report(MQTTError(operation: "CONNACK", code: rc, detail: detail, broker: sink.broker))
            }
        }
        mosquitto_disconnect_callback_set(mosq) { mosq, user, rc in
            guard let user else { return }
            let sink = Unmanaged<MQTTEventSink>.fromOpaque(user).takeUnretainedValue()
            let detail = MQTTClient.text(rc) // before anything else can change errno
            let wasUp = sink.isUp.exchange(false, ordering: .relaxed)
            mosquitto_log_callback_set(mosq, MQTTEventSink.log)
            // A refused CONNACK was reported with its reason; its disconnect says no more.
            if sink.refused.exchange(false, ordering: .relaxed) { return }
            // A TLS handshake that failed: OpenSSL's reason is the line libmosquitto logged.
            if !wasUp, sink.tls, let reason = sink.lastLoggedError.withLock({ $0 }), reason.contains("OpenSSL") {
                sink.report(MQTTError(operation: "TLS", code: rc, detail: reason, broker: sink.broker))
                return
            }
            sink.report(MQTTError(operation: "link", code: rc, detail: detail, broker: sink.broker))
        }
        // Until the first connection: keeps libmosquitto's error lines (the TLS reason).
        mosquitto_log_callback_set(mosq, MQTTEventSink.log)
        mosquitto_publish_callback_set(mosq) { _, user, mid in
            guard let user else { return }
            Unmanaged<MQTTEventSink>.fromOpaque(user).takeUnretainedValue().continuation.yield(.delivered(messageID: mid))
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
            Unmanaged<MQTTEventSink>.fromOpaque(user).takeUnretainedValue().continuation.yield(.message(m))
        }
    }

    deinit {
        // The thread holds the session: it frees the handle once it has returned.
        loop.withLock { $0 }?.requestStop()
        session.sink.continuation.finish()
    }

    /// Makes the first connection attempt and starts the network thread. An unreachable or
    /// refusing broker is not an error here: the thread keeps trying with backoff and reports
    /// `.connected` once it is in; so does a TLS handshake that fails (a certificate the CA
    /// did not sign can be replaced on the broker). Bad arguments or a bad host name are final.
    /// One network thread at a time: `start()` again before `stop()` throws (libmosquitto's
    /// loop must not run on two threads, and the first thread would never be stopped).
    public func start() throws(MQTTError) {
        try loop.withLock { (current) throws(MQTTError) in
            if let current, !current.hasEnded {
                throw MQTTError(operation: "start", code: MOSQ_ERR_INVAL.rawValue,
                                detail: "the client's network thread is already running; call stop() first", broker: options.broker)
            }
            session.sink.beginAttempt()
            let rc = mosquitto_connect_async(handle, options.host, Int32(options.port), Int32(max(5, options.keepAlive.components.seconds)))
            if rc == MOSQ_ERR_INVAL.rawValue || rc == MOSQ_ERR_EAI.rawValue {
                let logged = session.sink.lastLoggedError.withLock { $0 }
                throw MQTTError(operation: "mosquitto_connect_async(\(options.broker))", code: rc,
                                detail: Self.text(rc) + (logged.map { ": \($0)" } ?? ""), broker: options.broker)
            }
            session.sink.attemptEnded(rc)
            let started = MQTTNetworkLoop(session: session, options: options)
            current = started
            try started.start()
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

    /// Sends DISCONNECT (the broker then drops the will) and stops the network thread
    /// (bounded: 5 s).
    public func stop() {
        guard let running = loop.withLock({ $0 }) else {
            _ = mosquitto_disconnect(handle)
            return
        }
        running.stop()
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
final class MQTTEventSink: Sendable {
    let continuation: AsyncStream<MQTTEvent>.Continuation
    let broker: String
    let version: MQTTProtocolVersion
    /// The client connects with TLS (a failed handshake is reported as such).
    let tls: Bool
    /// The last error line libmosquitto logged while not connected (OpenSSL's reason for a
    /// failed handshake); written on the network thread or the thread calling `start()`.
    let lastLoggedError = Mutex<String?>(nil)
    /// The last CONNACK refused the connection (its disconnect follows).
    let refused = Atomic<Bool>(false)
    /// A session is up now (CONNACK accepted, no disconnect since).
    let isUp = Atomic<Bool>(false)
    /// A session came up since the network loop last looked (its backoff starts over).
    let wasUp = Atomic<Bool>(false)
    /// The end of the current attempt was reported (one `.disconnected` per attempt).
    let reported = Atomic<Bool>(false)

    init(_ continuation: AsyncStream<MQTTEvent>.Continuation, broker: String, version: MQTTProtocolVersion, tls: Bool) {
        self.continuation = continuation
        self.broker = broker
        self.version = version
        self.tls = tls
    }

    /// A new connection attempt: what libmosquitto logged for the last one no longer applies,
    /// and its end is not reported yet.
    func beginAttempt() {
        lastLoggedError.withLock { $0 = nil }
        reported.store(false, ordering: .relaxed)
    }

    /// The end of the current attempt or session, once.
    func report(_ error: MQTTError) {
        reported.store(true, ordering: .relaxed)
        continuation.yield(.disconnected(error))
    }

    /// What `mosquitto_connect_async` or `mosquitto_reconnect_async` returned (`operation`
    /// "connect"), or the code `mosquitto_loop` ended with ("link"), when no callback reported
    /// the end: libmosquitto calls none when the call itself fails, nor when the TLS handshake
    /// fails (MOSQ_ERR_TLS; OpenSSL's reason is then the line libmosquitto logged).
    func attemptEnded(_ rc: Int32, operation: String = "connect") {
        guard rc != MOSQ_ERR_SUCCESS.rawValue, !reported.load(ordering: .relaxed) else { return }
        if rc == MOSQ_ERR_TLS.rawValue {
            let reason = lastLoggedError.withLock { $0 } ?? MQTTClient.text(rc)
            report(MQTTError(operation: "TLS", code: rc, detail: reason, broker: broker))
        } else {
            report(MQTTError(operation: operation, code: rc, detail: MQTTClient.text(rc), broker: broker))
        }
    }

    /// libmosquitto's log callback, set only while the client is not connected.
    static let log: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = { _, user, level, text in
        guard let user, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
        let line = String(cString: text)
        Unmanaged<MQTTEventSink>.fromOpaque(user).takeUnretainedValue().lastLoggedError.withLock { $0 = line }
    }
}
