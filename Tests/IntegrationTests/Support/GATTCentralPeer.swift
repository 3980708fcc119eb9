import Foundation
import BLETestSupport

/// Fixtures/peers/gatt_central.py: Bumble as the GATT client of our server, one scenario a
/// run, its JSON lines as they come (they end 90 s after the start, the bound of every wait).
final class GATTCentralPeer: Sendable {
    static let hostAddress = "00:1B:DC:0F:00:0A"
    static let centralAddress = "C0:00:00:00:00:02"

    let process: ChildProcess
    let lines: AsyncStream<String>
    let port: Int

    init(scenario: String) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = ProcessInfo.processInfo.environment["BLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
            ?? root.appendingPathComponent(".venv/bin/python").path
        let script = root.appendingPathComponent("Fixtures/peers/gatt_central.py").path
        process = try ChildProcess(path: python, [script, "--scenario", scenario, "--host-address", Self.hostAddress,
                                                  "--central-address", Self.centralAddress], stdout: .pipe)
        let (stream, feed) = AsyncStream<String>.makeStream()
        let pending = PeripheralRadioTests.PendingText()
        PipeReader.start(process.pipe!, chunk: { bytes in
            for line in pending.append(bytes) { feed.yield(line) }
        }, end: { feed.finish() })
        lines = stream
        var iterator = stream.makeAsyncIterator()
        let ready = await iterator.next()
        guard let ready, let object = Self.object(ready), let port = object["port"] as? Int else {
            _ = process.stop()
            throw PeerFailure("gatt_central.py gave no ready line: \(ready ?? "its output ended")")
        }
        self.port = port
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// The value of the next line that has `key`; an "error" line from the peer fails at once.
    static func next(_ key: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> Any {
        while let line = await iterator.next() {
            guard let object = object(line) else { continue }
            if let value = object[key] { return value }
            if let error = object["error"] { throw PeerFailure("gatt_central.py failed before \(key): \(error)") }
        }
        throw PeerFailure("gatt_central.py printed no \(key) line before it ended (90 s after its start)")
    }

    /// The handle Bumble discovered for the characteristic `uuid` (its text as Bumble prints it).
    static func handle(of uuid: String, in characteristics: Any) -> Int? {
        (characteristics as? [[String: Any]])?.first { ($0["uuid"] as? String)?.uppercased().contains(uuid.uppercased()) == true }?["handle"] as? Int
    }

    func stop() { _ = process.stop() }

    struct PeerFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}
