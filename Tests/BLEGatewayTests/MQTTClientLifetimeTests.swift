import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// The MQTT client's lifetime against its network thread: clients made and dropped while the
/// broker answers, while it refuses, and in the middle of a connection attempt. The network
/// thread may outlive its client (a dropped client only asks it to end), so libmosquitto's
/// handle and what its callbacks reach must stay alive until that thread has returned.
@Suite(.serialized) struct MQTTClientLifetimeTests {
    /// The next event of `client` that `match` accepts, nil when the events ended first;
    /// throws `StillRunning` when none came within 10 s.
    static func firstEvent(_ client: MQTTClient, where match: @escaping @Sendable (MQTTEvent) -> Bool = { _ in true }) async throws -> MQTTEvent? {
        try await bounded(within: 10) {
            for await event in client.events where match(event) { return event }
            return nil
        }
    }

    /// Connected clients dropped without `stop()` while messages are still in flight on their
    /// threads (which go on writing, then send the DISCONNECT), others stopped so. Before
    /// that, each client's first messages are done (`.delivered`): the broker has them, so the
    /// watcher gets them. (What was still in flight at a stop may be lost: the socket closes
    /// with the broker's acknowledgements unread.)
    @Test func clientsDroppedWhileConnectedLeaveTheirThreadsToFinish() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "lifetime/#")
        for i in 0..<30 {
            let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "lifetime-\(i)"))
            try client.start()
            let first = try await Self.firstEvent(client)
            #expect(first == .connected, "client \(i): \(String(describing: first))")
            for n in 0..<40 {
                try client.publish(MQTTMessage(topic: "lifetime/load/\(i)", payload: [UInt8(n)], qos: n % 2 == 0 ? .atLeastOnce : .atMostOnce))
                // The first 20 are done (QoS 1 acknowledged, QoS 0 written) before the rest go.
                if n == 19 {
                    let done = Counter()
                    let twentieth = try await Self.firstEvent(client) { if case .delivered = $0 { return done.next() == 20 } else { return false } }
                    #expect(twentieth != nil, "client \(i): fewer than 20 messages done")
                }
            }
            if i % 2 == 1 { client.stop() }
            // Even clients go away here, their network thread still running.
        }
        for i in 0..<30 {
            _ = try await watcher.next("lifetime/load/\(i)") { $0.payload == [18] }
        }
        await watcher.stop()
    }

    /// Clients dropped while their threads retry a port nobody listens on (refused at once,
    /// then waiting out the backoff), and while an attempt on a live broker is still being
    /// made (dropped right after `start()`).
    @Test func clientsDroppedWhileRefusedOrConnecting() async throws {
        let closed = try Broker.freePort()
        for i in 0..<40 {
            var options = MQTTOptions(host: "127.0.0.1", port: closed, clientID: "refused-\(i)")
            options.reconnectDelay = .milliseconds(100)
            let client = try MQTTClient(options: options)
            try client.start()
            guard case .disconnected(let error) = try await Self.firstEvent(client) else {
                Issue.record("client \(i) on the closed port \(closed): no refusal")
                continue
            }
            // The non-blocking connect ends in ECONNREFUSED on the network thread:
            // MOSQ_ERR_ERRNO (14) with strerror's text.
            #expect(error.operation == "link" && error.code == 14 && error.detail == String(cString: strerror(ECONNREFUSED))
                    && error.broker == "127.0.0.1:\(closed)", "\(error)")
        }
        let broker = try await Broker.start()
        defer { broker.stop() }
        for i in 0..<40 {
            let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "connecting-\(i)"))
            try client.start()
        }
        // libmosquitto and the broker still serve a client after all of that.
        let last = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "after"))
        try last.start()
        #expect(try await Self.firstEvent(last) == .connected)
        last.stop()
    }

    /// One network thread per client: a second `start()` while it runs is refused (two threads
    /// in libmosquitto's loop on one handle, the first never stopped); `stop()` twice is fine;
    /// after `stop()` the client starts again.
    @Test func aSecondStartIsRefusedUntilTheClientStops() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "twice"))
        try client.start()
        #expect(try await Self.firstEvent(client) == .connected)
        do {
            try client.start()
            Issue.record("a second start() while the network thread runs was accepted")
        } catch {
            #expect(error.operation == "start" && error.broker == "127.0.0.1:\(broker.port)", "\(error)")
            #expect(error.description == "the MQTT client of the MQTT broker 127.0.0.1:\(broker.port) was not started: the client's network thread is already running; call stop() first")
        }
        client.stop()
        client.stop()
        try client.start()
        #expect(try await Self.firstEvent(client) { $0 == .connected } == .connected)
        client.stop()
    }
}

/// Counts the events a filter has seen (one task at a time).
private final class Counter: @unchecked Sendable { // touched only by the one task iterating the events
    private var n = 0
    func next() -> Int { n += 1; return n }
}
