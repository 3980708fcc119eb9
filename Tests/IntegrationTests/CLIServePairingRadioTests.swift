import Foundation
import Testing
import BLECore
import BLETestSupport

/// `ble serve` answering pairing, with Bumble's Security Manager and GATT client as the
/// independent central (Fixtures/peers/pairing_central.py) and Fixtures/gatt/serve-secure.yaml
/// as the database: Passkey Entry with the passkey `ble serve --io display-only` prints, Just
/// Works after a read refused for encryption and the Security Request that follows it (Vol 3,
/// Part H, 2.4.6, AuthReq 3.5.1), and a bonded central whose subscription (CCCD, Vol 3,
/// Part G, 3.3.3.3) is back when it encrypts its next link.
@Suite("ble serve pairing", .serialized, .timeLimit(.minutes(2)))
struct CLIServePairingRadioTests {
    static let encrypted = "12345678-1234-5678-1234-56789ABCDEF4"
    static let authenticated = "12345678-1234-5678-1234-56789ABCDEF5"
    static let central = "C0:00:00:00:00:02"

    /// `ble serve` as a process on the peer's controller, with a bond directory of its own.
    final class Server {
        let process: Process
        let input: Pipe
        let lines: AsyncStream<String>
        let bondDirectory: URL
        let watchdog: Task<Void, any Error>

        init(port: Int, _ options: [String]) throws {
            bondDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-bonds-\(UUID().uuidString)")
            process = Process()
            process.executableURL = BLETool.executable
            process.arguments = ["-d", "tcp:127.0.0.1:\(port)", "--bond-dir", bondDirectory.path,
                                 "serve", BLETool.fixture("gatt/serve-secure.yaml").path] + options
            var environment = ProcessInfo.processInfo.environment
            environment["NO_COLOR"] = "1"
            environment.removeValue(forKey: "BLE_LOG")
            process.environment = environment
            input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            let (stream, feed) = AsyncStream<String>.makeStream()
            let pending = PeripheralRadioTests.PendingText()
            PipeReader.start(taking: output.fileHandleForReading, chunk: { for line in pending.append($0) { feed.yield(line) } }, end: { feed.finish() })
            lines = stream
            try process.run()
            let pid = process.processIdentifier
            // The bound: the tool is killed 90 s after its start whatever happens.
            watchdog = Task { try await Task.sleep(for: .seconds(90)); kill(pid, SIGKILL) }
        }

        func stop() {
            watchdog.cancel()
            process.terminate()
            try? FileManager.default.removeItem(at: bondDirectory)
        }

        /// The next line of the tool's stdout that starts with `prefix`.
        static func next(_ prefix: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> String {
            while let line = await iterator.next() { if line.hasPrefix(prefix) { return line } }
            throw ResponderRadioTests.PeerFailure("ble serve printed no line starting with \"\(prefix)\" before its output ended")
        }
    }

    /// The next lines with `first` and with `second`, whichever comes first.
    static func both(_ first: String, _ second: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> ([String: Any], [String: Any]) {
        var a: [String: Any]?, b: [String: Any]?
        while a == nil || b == nil, let line = await iterator.next() {
            guard let object = PeripheralRadioTests.BumbleCentral.object(line) else { continue }
            if let v = object[first] { a = v as? [String: Any] ?? ["value": v] }
            if let v = object[second] { b = v as? [String: Any] ?? ["value": v] }
        }
        guard let a, let b else { throw ResponderRadioTests.PeerFailure("pairing_central.py printed no \(a == nil ? first : second) line within 60 s") }
        return (a, b)
    }

    @Test("--io display-only: the passkey printed on stdout, typed by Bumble, gives an authenticated bond; the readAuthenticated value is read")
    func passkeyDisplayed() async throws {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "keyboard", "--mitm"])
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let server = try Server(port: peer.port, ["--io", "display-only"])
        defer { server.stop() }
        var printed = server.lines.makeAsyncIterator()
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["pair": [String: Any]()])
        let shown = try await Server.next("passkey ", in: &printed)
        // Six digits, leading zeros kept (Vol 3, Part H, 2.3.5.3).
        let digits = String(shown.dropFirst("passkey ".count))
        #expect(digits.count == 6 && digits.allSatisfy(\.isNumber), "\(shown)")
        _ = try await ResponderRadioTests.next("passkeyRequest", in: &lines)
        try peer.send(["passkey": Int(digits) ?? -1])
        let paired = try await ResponderRadioTests.next("paired", in: &lines)
        #expect(paired["sc"] as? Bool == true)
        #expect(try await Server.next("paired ", in: &printed) == "paired \(Self.central) encrypted, authenticated, Secure Connections, bonded")
        try peer.send(["read": Self.authenticated])
        let read = try await ResponderRadioTests.next("read", in: &lines)
        #expect(read["value"] as? String == "6d69746d") // "mitm"
        let adapters = try FileManager.default.contentsOfDirectory(atPath: server.bondDirectory.path)
        #expect(adapters.count == 1, "one adapter directory with the bond: \(adapters)")
    }

    @Test("--io no-io: a read refused with Insufficient Encryption is followed by a Security Request; Bumble pairs (Just Works) and the read succeeds")
    func securityRequestAfterRefusal() async throws {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "none"])
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let server = try Server(port: peer.port, ["--io", "no-io"])
        defer { server.stop() }
        var printed = server.lines.makeAsyncIterator()
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["read": Self.encrypted])
        // Insufficient Encryption (Vol 3, Part F, 3.4.1.1: 0x0F).
        // AuthReq: Bonding (0b01) | SC (bit 3), no MITM for an encrypted-only permission (3.5.1).
        // The two come on different channels (ATT, SMP): in either order.
        let seen = try await Self.both("readFailed", "securityRequest", in: &lines)
        #expect(seen.0["error"] as? Int == 0x0F)
        #expect(seen.1["authReq"] as? Int == 0x09)
        try peer.send(["pair": [String: Any]()])
        _ = try await ResponderRadioTests.next("paired", in: &lines)
        #expect(try await Server.next("paired ", in: &printed) == "paired \(Self.central) encrypted, Secure Connections, bonded")
        try peer.send(["read": Self.encrypted])
        let read = try await ResponderRadioTests.next("read", in: &lines)
        #expect(read["value"] as? String == "736563726574") // "secret"
    }

    @Test("A bonded central that encrypts its next link has its CCCD back: a stdin line reaches it without a CCCD write")
    func bondedSubscriptionKept() async throws {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "none"])
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let server = try Server(port: peer.port, ["--io", "no-io", "--notify", "2A19"])
        defer { server.stop() }
        var printed = server.lines.makeAsyncIterator()
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["pair": [String: Any]()])
        _ = try await ResponderRadioTests.next("paired", in: &lines)
        try peer.send(["subscribe": "2A19"])
        _ = try await ResponderRadioTests.next("subscribed", in: &lines)
        let first = try await Server.next("subscribe ", in: &printed)
        #expect(first.hasPrefix("subscribe \(Self.central) 2A19 handle 0x") && first.hasSuffix(": notifications"), "\(first)")
        try peer.send(["reconnect": [String: Any]()])
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["encrypt": [String: Any]()])
        _ = try await ResponderRadioTests.next("encrypted", in: &lines)
        try peer.send(["listen": "2A19"])
        _ = try await ResponderRadioTests.next("listening", in: &lines)
        // The server reports the restored subscription: the same line, from the bond.
        #expect(try await Server.next("subscribe ", in: &printed) == first)
        server.input.fileHandleForWriting.write(Data("hello\n".utf8))
        let notification = try await ResponderRadioTests.next("notification", in: &lines)
        #expect(notification["value"] as? String == "68656c6c6f")
    }
}
