/// The gateway's side of the broker: a bounded queue of outgoing messages in front of the
/// MQTT client. A message leaves the queue when the broker acknowledged it (QoS 1) or it was
/// written (QoS 0); messages handed out when the link dropped go back to the front and are
/// sent again after the reconnect (QoS 1: at least once). When the queue is full the oldest
/// message is dropped and counted.
///
///     let publisher = Publisher(client: client, capacity: 10_000, onConnect: [online], subscriptions: ["ble/gw1/commands"])
///     await publisher.enqueue(message)
public actor Publisher {
    public nonisolated let client: MQTTClient
    public nonisolated let capacity: Int
    /// Messages received on the subscribed topics.
    public nonisolated let incoming: AsyncStream<MQTTMessage>
    private let incomingFeed: AsyncStream<MQTTMessage>.Continuation
    private let onConnect: [MQTTMessage]
    private let subscriptions: [String]

    private var queue: [MQTTMessage] = []
    private var head = 0
    /// Sent, unacknowledged messages by message id, with the order they were sent in (message
    /// ids wrap at 65535, so they cannot order them).
    private var inflight: [Int32: (order: UInt64, message: MQTTMessage)] = [:]
    private var sent: UInt64 = 0
    private var window: Int
    public private(set) var isConnected = false
    public private(set) var dropped = 0
    public private(set) var delivered = 0
    public private(set) var reconnects = 0
    public private(set) var connections = 0
    public private(set) var lastError: MQTTError?
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    private var connectWaiters: [CheckedContinuation<Void, Never>] = []

    /// `onConnect` goes out first on every (re)connect (the retained `online`), then the
    /// `subscriptions` are made again.
    public init(client: MQTTClient, capacity: Int, onConnect: [MQTTMessage] = [], subscriptions: [String] = []) {
        self.client = client
        self.capacity = max(1, capacity)
        self.onConnect = onConnect
        self.subscriptions = subscriptions
        window = max(1, client.options.maximumInflight)
        (incoming, incomingFeed) = AsyncStream.makeStream(of: MQTTMessage.self, bufferingPolicy: .bufferingNewest(1024))
    }

    /// Messages waiting, including those sent and not yet acknowledged.
    public var depth: Int { queue.count - head + inflight.count }

    /// Queues `message`; drops the oldest waiting message when the queue is full.
    public func enqueue(_ message: MQTTMessage) {
        if depth >= capacity {
            if head < queue.count {
                head += 1
                compact()
            }
            dropped += 1
            if depth >= capacity { return }
        }
        queue.append(message)
        pump()
    }

    /// Handles the client's events until the calling task is cancelled.
    public func run() async {
        for await event in client.events {
            handle(event)
        }
        incomingFeed.finish()
    }

    func handle(_ event: MQTTEvent) {
        switch event {
        case .connected:
            isConnected = true
            connections += 1
            if connections > 1 { reconnects += 1 }
            for m in onConnect { _ = try? client.publish(m) }
            for s in subscriptions { _ = try? client.subscribe(s, qos: .atLeastOnce) }
            let waiters = connectWaiters
            connectWaiters = []
            for w in waiters { w.resume() }
            pump()
        case .disconnected(let error):
            lastError = error
            guard isConnected else { return }
            isConnected = false
            requeueInflight()
        case .delivered(let mid):
            if inflight.removeValue(forKey: mid) != nil { delivered += 1 }
            pump()
        case .message(let m):
            incomingFeed.yield(m)
        }
    }

    /// Returns once the broker has every queued message, or after `timeout`.
    public func drain(timeout: Duration) async {
        if depth == 0 { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.releaseDrainWaiters()
        }
        await withCheckedContinuation { drainWaiters.append($0) }
        timer.cancel()
    }

    /// Returns once the client is connected, or after `timeout`.
    public func waitUntilConnected(timeout: Duration) async {
        if isConnected { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.releaseConnectWaiters()
        }
        await withCheckedContinuation { connectWaiters.append($0) }
        timer.cancel()
    }

    private func releaseDrainWaiters() {
        let waiters = drainWaiters
        drainWaiters = []
        for w in waiters { w.resume() }
    }

    private func releaseConnectWaiters() {
        let waiters = connectWaiters
        connectWaiters = []
        for w in waiters { w.resume() }
    }

    private func pump() {
        while isConnected, inflight.count < window, head < queue.count {
            let m = queue[head]
            do {
                let mid = try client.publish(m)
                head += 1
                sent += 1
                inflight[mid] = (sent, m)
            } catch {
                lastError = error
                if error.isNotConnected {
                    isConnected = false
                    requeueInflight()
                } else {
                    head += 1 // the broker can never take this one (too large, bad topic): drop it
                    dropped += 1
                }
                break
            }
        }
        compact()
        if depth == 0 && !drainWaiters.isEmpty { releaseDrainWaiters() }
    }

    /// Sent, unacknowledged messages go back to the front in the order they were sent.
    private func requeueInflight() {
        guard !inflight.isEmpty else { return }
        let again = inflight.values.sorted { $0.order < $1.order }.map(\.message)
        inflight = [:]
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
