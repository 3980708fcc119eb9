import BLEGateway
import Foundation
import Testing

/// The publisher's bounded queue: the oldest message is dropped and counted, whether it
/// waits or (when nothing waits) is in flight; every message ends delivered or dropped, once.
/// A mosquitto stopped with SIGSTOP keeps its connections but acknowledges nothing, so the
/// messages handed to the client stay in flight until SIGCONT.
@Suite(.serialized) struct PublisherQueueTests {
    static func publisher(port: Int, capacity: Int, window: Int = 100) throws -> (MQTTClient, Publisher) {
        var o = MQTTOptions(host: "127.0.0.1", port: port, clientID: "queue-\(UUID().uuidString.prefix(8))")
        o.reconnectDelay = .seconds(1)
        o.reconnectMaximumDelay = .seconds(1)
        o.maximumInflight = window
        let client = try MQTTClient(options: o)
        return (client, Publisher(client: client, capacity: capacity))
    }

    static func numbered(_ i: Int) -> MQTTMessage { MQTTMessage(topic: "q/n", text: "\(i)", qos: .atLeastOnce) }

    @Test func aFullQueueDropsTheOldestAndCountsThem() async throws {
        let (client, publisher) = try Self.publisher(port: try Broker.freePort(), capacity: 5)
        let events = Task { await publisher.run() }
        try client.start() // nobody listens on the port: the client retries with backoff
        for i in 1...8 { await publisher.enqueue(Self.numbered(i)) }
        #expect(await publisher.depth == 5)
        #expect(await publisher.dropped == 3)
        #expect(await publisher.enqueued == 8)
        #expect(await publisher.isConnected == false)
        events.cancel()
        client.stop()
    }

    @Test func whenEveryMessageIsInFlightTheOldestInFlightIsDropped() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let (client, publisher) = try Self.publisher(port: broker.port, capacity: 3)
        let events = Task { await publisher.run() }
        try client.start()
        #expect(await publisher.waitUntilConnected(timeout: .seconds(10)))
        broker.signal(SIGSTOP)
        for i in 1...3 { await publisher.enqueue(Self.numbered(i)) }
        #expect(await publisher.inFlight == 3)
        #expect(await publisher.dropped == 0)
        // Full, nothing waiting: 1 and then 2 (the oldest in flight) leave the bound.
        for i in 4...5 { await publisher.enqueue(Self.numbered(i)) }
        #expect(await publisher.depth == 3)
        #expect(await publisher.inFlight == 3)
        #expect(await publisher.dropped == 2)
        broker.signal(SIGCONT)
        #expect(await publisher.drain(timeout: .seconds(10)))
        // Acknowledgements of the dropped two are not counted: each message is counted once.
        #expect(await publisher.delivered == 3)
        #expect(await publisher.enqueued == 5)
        #expect(await publisher.depth == 0)
        events.cancel()
        client.stop()
    }

    @Test func theOldestWaitingMessageGoesBeforeAnyInFlight() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "q/#")
        let (client, publisher) = try Self.publisher(port: broker.port, capacity: 4, window: 2)
        let events = Task { await publisher.run() }
        try client.start()
        #expect(await publisher.waitUntilConnected(timeout: .seconds(10)))
        broker.signal(SIGSTOP)
        // 1 and 2 in flight (the window), 3 and 4 waiting; 5 drops 3.
        for i in 1...5 { await publisher.enqueue(Self.numbered(i)) }
        #expect(await publisher.inFlight == 2)
        #expect(await publisher.depth == 4)
        #expect(await publisher.dropped == 1)
        broker.signal(SIGCONT)
        #expect(await publisher.drain(timeout: .seconds(10)))
        #expect(await publisher.delivered == 4)
        _ = try await watcher.next("q/n") { $0.text == "5" }
        #expect(await watcher.on("q/n").map(\.text) == ["1", "2", "4", "5"])
        await watcher.stop()
        events.cancel()
        client.stop()
    }

    @Test func drainAndWaitUntilConnectedEndAtTheirTimeoutOrCancellation() async throws {
        let (client, publisher) = try Self.publisher(port: try Broker.freePort(), capacity: 5)
        let events = Task { await publisher.run() }
        try client.start()
        await publisher.enqueue(Self.numbered(1))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await publisher.drain(timeout: .milliseconds(200)) == false)
        #expect(await publisher.waitUntilConnected(timeout: .milliseconds(200)) == false)
        #expect(clock.now - start >= .milliseconds(400))
        // Cancelled long waits end at once with false.
        let drain = Task { await publisher.drain(timeout: .seconds(600)) }
        let connect = Task { await publisher.waitUntilConnected(timeout: .seconds(600)) }
        drain.cancel()
        connect.cancel()
        #expect(await drain.value == false)
        #expect(await connect.value == false)
        #expect(clock.now - start < .seconds(60))
        events.cancel()
        client.stop()
    }
}
