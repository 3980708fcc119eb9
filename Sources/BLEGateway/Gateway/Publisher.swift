import BLECore
import BLETransport

/// The gateway's side of the broker: a bounded queue of outgoing messages in front of the
/// MQTT client.
///
/// A message is *waiting* until it is handed to libmosquitto, then *in flight* until the
/// client reports it done: acknowledged (QoS 1) or written (QoS 0). libmosquitto keeps a QoS 1
/// message it was handed across a broker drop and sends it again after the reconnect, so such
/// a message stays in flight; a QoS 0 message in flight at a drop is lost inside libmosquitto,
/// so it goes back to the front of the queue.
///
/// The bound: waiting plus in flight is at most `capacity`. A message that would go beyond
/// drops the oldest waiting message or, when every message is in flight, the oldest in flight
/// (the publisher stops tracking it: it is neither sent again nor counted as delivered, though
/// libmosquitto may still deliver it since it already has it). Each drop counts once in
/// `dropped`, so after every message is done, `enqueued == delivered + dropped`.
///
///     let publisher = Publisher(client: client, capacity: 10_000, onConnect: [online], subscriptions: ["ble/gw1/commands"])
///     await publisher.enqueue(message)
public actor Publisher {
    public nonisolated let client: MQTTClient
    public nonisolated let capacity: Int
    /// Messages received on the subscribed topics.
    public nonisolated let incoming: AsyncStream<MQTTMessage>
    private let incomingFeed: AsyncStream<MQTTMessage>.Continuation
    /// The session's ups (true, after the `onConnect` messages) and downs (false), for the one
    /// reader that follows them (the fleet's claims); the newest 16 are kept.
    nonisolated let connectionChanges: AsyncStream<Bool>
    private let connectionFeed: AsyncStream<Bool>.Continuation
    private let onConnect: [MQTTMessage]
    private let subscriptions: [String]
    private let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var queue: [MQTTMessage] = []
    private var head = 0
    /// Handed to the client, not yet done, by message id, with the order they were handed
    /// over in (message ids wrap at 65535, so they cannot order them).
    private var inflight: [Int32: (order: UInt64, message: MQTTMessage)] = [:]
    /// Dropped while in flight: the client still holds them (they count against `window`).
    private var abandoned: [Int32: MQTTQoS] = [:]
    private var sent: UInt64 = 0
    private let window: Int
    public private(set) var isConnected = false
    /// Messages given to `enqueue`.
    public private(set) var enqueued = 0
    /// Messages dropped: beyond the bound, or refused for good by the client (too large, bad topic).
    public private(set) var dropped = 0
    /// Messages done: acknowledged (QoS 1) or written (QoS 0).
    public private(set) var delivered = 0
    public private(set) var reconnects = 0
    public private(set) var connections = 0
    /// Connection attempts that ended without a session: refused, TLS failed, unreachable.
    public private(set) var connectFailures = 0
    public private(set) var lastError: MQTTError?
    private let drained: Waiters<Bool, Never>
    private let connected: Waiters<Bool, Never>
    private let failed: Waiters<Bool, Never>
    private let scheduler: any TimerScheduler
    private let logger: BLELogger
    private let logInterval: Duration
    /// The last broker error logged, when, and how many failures were not logged since.
    private var logged: (error: MQTTError, time: ContinuousClock.Instant, unlogged: Int)?

    /// `onConnect` goes out first on every (re)connect (the retained `online`), then the
    /// `subscriptions` are made again. The publisher runs on `executor` (its own by default);
    /// the timeouts of `drain` and `waitUntilConnected` come from `scheduler` (dispatch
    /// timers on the executor's queue by default; a manual clock in tests). Broker errors go
    /// to `logger` as warnings: a new error at once, the same error again at most once per
    /// `logInterval` (with the count of failures in between). `incoming` keeps the newest
    /// `incomingCapacity` messages its reader has not taken yet.
    public init(client: MQTTClient, capacity: Int, onConnect: [MQTTMessage] = [], subscriptions: [String] = [],
                executor: AdapterExecutor? = nil, scheduler: (any TimerScheduler)? = nil,
                logger: BLELogger = .silent, logInterval: Duration = .seconds(60), incomingCapacity: Int = 1024) {
        self.client = client
        self.capacity = max(1, capacity)
        self.onConnect = onConnect
        self.subscriptions = subscriptions
        let executor = executor ?? AdapterExecutor(label: "gateway.publisher")
        self.executor = executor
        let scheduler = scheduler ?? DispatchTimerScheduler(queue: executor.queue)
        self.scheduler = scheduler
        self.logger = logger
        self.logInterval = logInterval
        drained = Waiters(executor: executor, scheduler: scheduler)
        connected = Waiters(executor: executor, scheduler: scheduler)
        failed = Waiters(executor: executor, scheduler: scheduler)
        window = max(1, client.options.maximumInflight)
        (incoming, incomingFeed) = AsyncStream.makeStream(of: MQTTMessage.self, bufferingPolicy: .bufferingNewest(max(1, incomingCapacity)))
        (connectionChanges, connectionFeed) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(16))
    }

    /// Messages waiting, including those in flight (handed to the client, not yet done).
    public var depth: Int { queue.count - head + inflight.count }

    /// Messages in flight now.
    public var inFlight: Int { inflight.count }

    /// Queues `message`; when the queue is full, drops the oldest (see the type's comment).
    public func enqueue(_ message: MQTTMessage) {
        enqueued += 1
        if depth >= capacity { dropOldest() }
        queue.append(message)
        pump()
    }

    /// The oldest waiting message or, when none waits, the oldest in flight leaves the bound.
    private func dropOldest() {
        dropped += 1
        if head < queue.count {
            head += 1
            compact()
        } else if let oldest = inflight.min(by: { $0.value.order < $1.value.order }) {
            inflight[oldest.key] = nil
            abandoned[oldest.key] = oldest.value.message.qos
        }
    }

    /// Handles the client's events until the calling task is cancelled.
    public func run() async {
        for await event in client.events {
            handle(event)
        }
        incomingFeed.finish()
        connectionFeed.finish()
    }

    func handle(_ event: MQTTEvent) {
        switch event {
        case .connected:
            isConnected = true
            connections += 1
            if connections > 1 { reconnects += 1 }
            // Subscriptions first: the broker handles one client's packets in order, so whoever
            // sees the `online` that follows can send a command and it is not lost.
            for s in subscriptions { _ = try? client.subscribe(s, qos: .atLeastOnce) }
            for m in onConnect { _ = try? client.publish(m) }
            if !connected.isEmpty { connected.resumeAll(with: .success(true)) }
            connectionFeed.yield(true)
            pump()
        case .disconnected(let error):
            lastError = error
            log(error)
            guard isConnected else {
                connectFailures += 1
                if !failed.isEmpty { failed.resumeAll(with: .success(true)) }
                return
            }
            isConnected = false
            connectionFeed.yield(false)
            requeueUnsent()
        case .delivered(let mid):
            if inflight.removeValue(forKey: mid) != nil {
                delivered += 1
            } else {
                abandoned[mid] = nil
            }
            pump()
        case .message(let m):
            incomingFeed.yield(m)
        }
    }

    /// Waits until the broker has every queued message (true), or `timeout` passed or the
    /// task was cancelled first (false).
    @discardableResult
    public func drain(timeout: Duration) async -> Bool {
        if depth == 0 { return true }
        let result = await drained.wait(deadline: (timeout, .success(false)), cancelled: { _ in .success(false) })
        guard case .success(let done) = result else { return false }
        return done
    }

    /// Waits until more than `count` connection attempts have failed (true), or `timeout`
    /// passed or the task was cancelled first (false).
    ///
    ///     let retried = await publisher.waitForConnectFailures(moreThan: 1, timeout: .seconds(15))
    @discardableResult
    public func waitForConnectFailures(moreThan count: Int, timeout: Duration) async -> Bool {
        let deadline = scheduler.now() + timeout
        while connectFailures <= count {
            let left = deadline - scheduler.now()
            guard left > .zero else { return false }
            let result = await failed.wait(deadline: (left, .success(false)), cancelled: { _ in .success(false) })
            guard case .success(true) = result else { return false }
        }
        return true
    }

    /// A broker error as a warning: a new one at once, the same one again once per `logInterval`.
    private func log(_ error: MQTTError) {
        // Code 0 on the link: the client's own DISCONNECT (a clean stop), nothing to warn about.
        if error.operation == "link" && error.code == 0 { return }
        let now = scheduler.now()
        if let last = logged, last.error == error, now - last.time < logInterval {
            logged?.unlogged += 1
            return
        }
        let more = logged.map { $0.error == error && $0.unlogged > 0 ? " (\($0.unlogged + 1) times since the last report)" : "" } ?? ""
        logger.log(.warning, "MQTT: \(error)\(more)")
        logged = (error, now, 0)
    }

    /// Waits until the client is connected (true), or `timeout` passed or the task was
    /// cancelled first (false).
    @discardableResult
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        if isConnected { return true }
        let result = await connected.wait(deadline: (timeout, .success(false)), cancelled: { _ in .success(false) })
        guard case .success(let up) = result else { return false }
        return up
    }

    private func pump() {
        while isConnected, inflight.count + abandoned.count < window, head < queue.count {
            let m = queue[head]
            do {
                let mid = try client.publish(m)
                track(m, mid)
            } catch {
                lastError = error
                if error.isNotConnected {
                    // libmosquitto keeps a QoS 1 message it was given while the link is down
                    // and sends it after the reconnect; a QoS 0 one it refuses.
                    if m.qos != .atMostOnce, let mid = error.messageID { track(m, mid) }
                    isConnected = false
                    connectionFeed.yield(false)
                    requeueUnsent()
                } else {
                    head += 1 // the broker can never take this one (too large, bad topic): drop it
                    dropped += 1
                }
                break
            }
        }
        compact()
        if depth == 0 && !drained.isEmpty { drained.resumeAll(with: .success(true)) }
    }

    private func track(_ m: MQTTMessage, _ mid: Int32) {
        head += 1
        sent += 1
        inflight[mid] = (sent, m)
    }

    /// At a drop, QoS 0 messages in flight go back to the front in the order they were handed
    /// over; QoS 1 ones stay with the client, which sends them again after the reconnect.
    private func requeueUnsent() {
        abandoned = abandoned.filter { $0.value != .atMostOnce }
        let lost = inflight.filter { $0.value.message.qos == .atMostOnce }
        guard !lost.isEmpty else { return }
        for mid in lost.keys { inflight[mid] = nil }
        let again = lost.values.sorted { $0.order < $1.order }.map(\.message)
        queue = again + queue[head...]
        head = 0
    }

    private func compact() {
        if head > 1024 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        } else if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
    }
}
