import BLEGateway
import Foundation

/// An MQTT client that records every message on `pattern` and lets a test wait for the ones
/// it expects (bounded waits; no polling: each message wakes the waiters).
///
///     let watcher = try await Watcher.start(broker, "ble/#")
///     let online = try await watcher.next("ble/gw/status")
actor Watcher {
    let client: MQTTClient
    private(set) var messages: [MQTTMessage] = []
    private var waiters: [(id: UInt64, match: @Sendable (MQTTMessage) -> Bool, c: CheckedContinuation<MQTTMessage?, Never>)] = []
    private var nextID: UInt64 = 0
    private var pump: Task<Void, Never>?
    private var connectedCount = 0
    private var connectWaiters: [CheckedContinuation<Void, Never>] = []

    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    init(client: MQTTClient) { self.client = client }

    static func start(_ broker: Broker, _ pattern: String, clientID: String = "watcher-\(UUID().uuidString.prefix(8))",
                      _ configure: (inout MQTTOptions) -> Void = { _ in }) async throws -> Watcher {
        var o = MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: clientID)
        configure(&o)
        o.reconnectDelay = .seconds(1)
        o.reconnectMaximumDelay = .seconds(1)
        o.cleanSession = false
        let w = Watcher(client: try MQTTClient(options: o))
        await w.begin(pattern)
        try w.client.start()
        try await w.waitConnected(1)
        return w
    }

    private func begin(_ pattern: String) {
        let client = self.client
        pump = Task {
            for await event in client.events {
                switch event {
                case .connected:
                    _ = try? client.subscribe(pattern, qos: .atLeastOnce)
                    self.connected()
                case .message(let m): self.record(m)
                default: break
                }
            }
        }
    }

    private func connected() {
        connectedCount += 1
        let w = connectWaiters
        connectWaiters = []
        for c in w { c.resume() }
    }

    /// Waits until the watcher has connected `count` times (bounded: 15 s).
    func waitConnected(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while connectedCount < count {
            if ContinuousClock.now > deadline { throw Timeout(description: "watcher did not connect \(count) times within 15 s") }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: .seconds(15))
                await self?.releaseConnectWaiters()
            }
            await withCheckedContinuation { connectWaiters.append($0) }
            timer.cancel()
        }
        // The SUBSCRIBE goes out right after CONNACK; a round trip through the broker confirms it.
        let probe = "probe/\(UUID().uuidString)"
        try client.subscribe(probe)
        try client.publish(MQTTMessage(topic: probe, text: "1", qos: .atLeastOnce))
        _ = try await next(probe)
    }

    private func releaseConnectWaiters() {
        let w = connectWaiters
        connectWaiters = []
        for c in w { c.resume() }
    }

    private func record(_ m: MQTTMessage) {
        messages.append(m)
        var kept: [(id: UInt64, match: @Sendable (MQTTMessage) -> Bool, c: CheckedContinuation<MQTTMessage?, Never>)] = []
        for w in waiters {
            if w.match(m) { w.c.resume(returning: m) } else { kept.append(w) }
        }
        waiters = kept
    }

    /// The `n`th message (from 1, already recorded or still to come) on `topic`.
    func nth(_ n: Int, on topic: String, timeout: Duration = .seconds(15)) async throws -> MQTTMessage {
        while on(topic).count < n { _ = try await next(topic, timeout: timeout, recorded: false) }
        return on(topic)[n - 1]
    }

    /// The first message (already recorded unless `recorded` is false, or still to come) on `topic` that `match` accepts.
    func next(_ topic: String, timeout: Duration = .seconds(15), recorded: Bool = true,
              where match: @escaping @Sendable (MQTTMessage) -> Bool = { _ in true }) async throws -> MQTTMessage {
        let accept: @Sendable (MQTTMessage) -> Bool = { $0.topic == topic && match($0) }
        if recorded, let m = messages.first(where: accept) { return m }
        nextID += 1
        let id = nextID
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        let m = await withCheckedContinuation { c in waiters.append((id, accept, c)) }
        timer.cancel()
        guard let m else {
            throw Timeout(description: "no message on \(topic) within \(timeout); seen: \(messages.map { "\($0.topic)=\($0.text)" }.suffix(20))")
        }
        return m
    }

    private func expire(_ id: UInt64) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: i).c.resume(returning: nil)
    }

    /// Forgets the messages recorded so far (the next `next` waits for new ones).
    func clear() { messages = [] }

    /// The messages recorded so far, in arrival order, forgotten at the same time (nothing
    /// arrives between the two).
    func takeAll() -> [MQTTMessage] {
        defer { messages = [] }
        return messages
    }

    /// Messages recorded on `topic`.
    func on(_ topic: String) -> [MQTTMessage] { messages.filter { $0.topic == topic } }

    func stop() {
        pump?.cancel()
        client.stop()
    }
}
