import Foundation

/// `Fixtures/peers/tcp_relay.py` between some clients and the broker: `cut()` ends every
/// connection through it at once (a partition), `heal()` listens again on the same port.
///
///     let relay = try await Relay.start(to: broker); ... relay.cut(); ... try await relay.heal()
final class Relay: @unchecked Sendable { // `process` is used from the one test that owns the relay
    let port: Int
    let target: Int
    private var process: Child?

    var url: String { "mqtt://127.0.0.1:\(port)" }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init(port: Int, target: Int) {
        self.port = port
        self.target = target
    }

    static func start(to broker: Broker) async throws -> Relay {
        let relay = Relay(port: try Broker.freePort(), target: broker.port)
        try await relay.heal()
        return relay
    }

    /// Starts the relay and returns once it listens (bounded: 10 s).
    func heal() async throws {
        let script = GatewayProcessTests.packageRoot.appendingPathComponent("Fixtures/peers/tcp_relay.py").path
        let child = try Child(path: "/usr/bin/python3", [script, String(port), String(target)])
        process = child
        let text = await Child.read(child.stderr, timeout: .seconds(10)) { $0.contains("relaying") }
        guard text.contains("relaying") else { throw Failure(description: "tcp_relay.py on port \(port) did not start within 10 s: \(text)") }
    }

    /// SIGKILL: every connection through the relay ends at once.
    func cut() {
        guard let p = process else { return }
        process = nil
        p.signal(SIGKILL)
        var status: Int32 = 0
        while waitpid(p.pid, &status, 0) < 0 && errno == EINTR {}
    }

    deinit { cut() }
}
