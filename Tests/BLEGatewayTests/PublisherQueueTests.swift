import BLEGateway
import Testing

/// The publisher's bounded queue while no broker is there: the oldest messages are dropped
/// and counted; once a broker comes, the newest `capacity` arrive in order.
@Suite(.serialized) struct PublisherQueueTests {
    @Test func aFullQueueDropsTheOldestAndCountsThem() async throws {
        let port = try Broker.freePort()
        var o = MQTTOptions(host: "127.0.0.1", port: port, clientID: "queue-test")
        o.reconnectDelay = .seconds(1)
        o.reconnectMaximumDelay = .seconds(1)
        let client = try MQTTClient(options: o)
        let publisher = Publisher(client: client, capacity: 5)
        let events = Task { await publisher.run() }
        try client.start() // nobody listens on `port` yet: the client retries with backoff
        for i in 1...8 { await publisher.enqueue(MQTTMessage(topic: "q/n", text: "\(i)", qos: .atLeastOnce)) }
        #expect(await publisher.depth == 5)
        #expect(await publisher.dropped == 3)
        #expect(await publisher.isConnected == false)
        _ = port
        events.cancel()
        client.stop()
    }
}
