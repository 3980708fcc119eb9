import BLECore
import CMosquitto
import Dispatch
import Glibc
import Synchronization

/// One libmosquitto client handle and what its callbacks reach; destroyed when the last of
/// its owners (the `MQTTClient` and its network thread) lets go, so the thread never outlives it.
final class MosquittoSession: @unchecked Sendable { // `handle` is used only through libmosquitto calls, thread-safe in threaded mode
    let handle: OpaquePointer
    let sink: MQTTEventSink

    init(handle: OpaquePointer, sink: MQTTEventSink) {
        self.handle = handle
        self.sink = sink
    }

    deinit { mosquitto_destroy(handle) }
}

/// The client's network thread: libmosquitto's loop (`mosquitto_loop`) while a connection is
/// up or being made, and a new attempt after each failure, with a doubling backoff that
/// `stop()` cuts short.
///
/// The retries are ours, not libmosquitto's: its own thread (`mosquitto_loop_start`,
/// `mosquitto_loop_forever`) gives up for good after a refused MQTT 5 CONNACK (a reason code
/// of 0x80 or more is a protocol error to it) and after a failed TLS handshake (EPROTO), so a
/// client the broker refused once would stay offline until restarted.
final class MQTTNetworkLoop: Sendable {
    private let session: MosquittoSession
    private let broker: String
    private let keepAliveMilliseconds: Int32
    private let firstDelay: Duration
    private let maximumDelay: Duration
    private let stopping = Atomic<Bool>(false)
    /// Signalled by `stop()`: ends a backoff wait at once.
    private let wake = DispatchSemaphore(value: 0)
    /// Entered when the thread starts, left when it has returned: any number of `stop()`
    /// calls wait on it, and a wait after the end returns at once.
    private let running = DispatchGroup()

    init(session: MosquittoSession, options: MQTTOptions) {
        self.session = session
        broker = options.broker
        keepAliveMilliseconds = Int32(clamping: max(5, options.keepAlive.components.seconds) * 1000)
        firstDelay = max(.milliseconds(100), options.reconnectDelay)
        maximumDelay = max(firstDelay, options.reconnectMaximumDelay)
    }

    /// Starts the thread; the first connection attempt was made by the caller
    /// (`mosquitto_connect_async`), so its final mistakes are thrown where they were made.
    /// Fails with pthread_create's errno when no thread can be made.
    func start() throws(MQTTError) {
        running.enter()
        let err = DetachedThread.start { [self] in
            run()
            running.leave()
        }
        guard err == 0 else {
            running.leave()
            throw MQTTError(operation: "pthread_create", code: MOSQ_ERR_ERRNO.rawValue,
                            detail: "no thread for the MQTT network loop: \(String(cString: strerror(err))) (errno \(err)); the process is at its thread or memory limit",
                            broker: broker)
        }
    }

    /// True once the thread has returned: the handle is free for another loop.
    var hasEnded: Bool { running.wait(timeout: .now()) == .success }

    /// Sends DISCONNECT when connected (the broker then drops the will), ends the thread and
    /// waits for it (bounded: 5 s; a thread still busy then ends on its own and frees the handle).
    func stop() {
        requestStop()
        _ = running.wait(timeout: .now() + .seconds(5))
    }

    /// Asks the thread to end without waiting (the client went away without `stop()`).
    func requestStop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        _ = mosquitto_disconnect(session.handle)
        wake.signal()
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    private func run() {
        let handle = session.handle
        let sink = session.sink
        var delay = firstDelay
        while true {
            // Until the link is down (mosquitto_loop answers MOSQ_ERR_NO_CONN once the socket is
            // closed). When stopping, a session that is up first writes its DISCONNECT.
            var rc = MOSQ_ERR_SUCCESS.rawValue
            while rc == MOSQ_ERR_SUCCESS.rawValue && !(isStopping && !sink.isUp.load(ordering: .relaxed)) {
                rc = mosquitto_loop(handle, keepAliveMilliseconds, 1)
            }
            if isStopping { return }
            if sink.isUp.exchange(false, ordering: .relaxed) {
                // A session that ended without its disconnect callback: keep libmosquitto's
                // error lines again for the next attempt.
                mosquitto_log_callback_set(handle, MQTTEventSink.log)
            }
            sink.attemptEnded(rc, operation: "link")
            if sink.wasUp.exchange(false, ordering: .relaxed) { delay = firstDelay }
            _ = wake.wait(timeout: .now() + Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            if isStopping { return }
            delay = min(delay * 2, maximumDelay)
            sink.beginAttempt()
            let attempt = mosquitto_reconnect_async(handle)
            sink.attemptEnded(attempt)
        }
    }
}
