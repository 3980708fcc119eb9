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
    static let signed = "12345678-1234-5678-1234-56789ABCDEF6"
    static let central = "C0:00:00:00:00:02"

    /// `ble serve` as a process on the peer's controller, with a bond directory of its own.
    final class Server {
        let process: ChildProcess
        let lines: AsyncStream<String>
        let bondDirectory: URL
        /// The exit status; the tool is killed 90 s after its start whatever happens.
        let exit: Task<Int32, Never>

        /// `bondDirectory`: an earlier server's, as after a restart (a new one by default).
        init(port: Int, _ options: [String], bondDirectory: URL? = nil) throws {
            self.bondDirectory = bondDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-bonds-\(UUID().uuidString)")
            var environment = ProcessInfo.processInfo.environment
            environment["NO_COLOR"] = "1"
            environment.removeValue(forKey: "BLE_LOG")
            let process = try ChildProcess(
                path: BLETool.executable.path,
                ["-d", "tcp:127.0.0.1:\(port)", "--bond-dir", self.bondDirectory.path, "serve", BLETool.fixture("gatt/serve-secure.yaml").path] + options,
                environment: environment, stdin: .pipe, stdout: .pipe)
            self.process = process
            let (stream, feed) = AsyncStream<String>.makeStream()
            let pending = PeripheralRadioTests.PendingText()
            PipeReader.start(process.pipe ?? -1, chunk: { for line in pending.append($0) { feed.yield(line) } }, end: { feed.finish() })
            lines = stream
            exit = Task { await process.exitStatus(killingAfter: .seconds(90)) }
        }

        /// Writes one line to the tool's stdin.
        func send(_ line: String) throws {
            try process.send(Array((line + "\n").utf8))
        }

        /// SIGTERM; the exit task's bound still holds should the tool not end.
        func stop() {
            kill(process.pid, SIGTERM)
            if let input = process.input { close(input) }
            try? FileManager.default.removeItem(at: bondDirectory)
        }

        /// The next line of the tool's stdout that starts with `prefix`.
        static func next(_ prefix: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> String {
            while let line = await iterator.next() { if line.hasPrefix(prefix) { return line } }
            throw ResponderRadioTests.PeerFailure("ble serve printed no line starting with \"\(prefix)\" before its output ended")
        }
    }

    /// Sends SIGTERM and waits for the tool to exit (the bound of its exit task holds), leaving
    /// its bond directory for the next server.
    static func restart(_ server: Server, printed: inout AsyncStream<String>.Iterator) async {
        kill(server.process.pid, SIGTERM)
        _ = await server.exit.value
        while await printed.next() != nil {}
        if let input = server.process.input { close(input) }
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
        try server.send("hello")
        let notification = try await ResponderRadioTests.next("notification", in: &lines)
        #expect(notification["value"] as? String == "68656c6c6f")
    }

    @Test("The CCCD is kept in the bond file: after ble serve restarts, the bonded central encrypts and a stdin line reaches it without a CCCD write")
    func subscriptionKeptAcrossRestart() async throws {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "none"])
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let first = try Server(port: peer.port, ["--io", "no-io", "--notify", "2A19"])
        var printed = first.lines.makeAsyncIterator()
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["pair": [String: Any]()])
        _ = try await ResponderRadioTests.next("paired", in: &lines)
        try peer.send(["subscribe": "2A19"])
        _ = try await ResponderRadioTests.next("subscribed", in: &lines)
        let subscribed = try await Server.next("subscribe ", in: &printed)
        #expect(subscribed.hasPrefix("subscribe \(Self.central) 2A19 handle 0x") && subscribed.hasSuffix(": notifications"), "\(subscribed)")
        await Self.restart(first, printed: &printed)
        _ = try await ResponderRadioTests.next("disconnected", in: &lines)

        // The bond file names the CCCD, the attribute after the value (Vol 3, Part G, 3.3.3.3),
        // with notifications enabled (0x0001).
        let valueHandle = try #require(UInt16(subscribed.split(separator: " ")[4].dropFirst(2).prefix(4), radix: 16))
        let adapter = try #require(try FileManager.default.contentsOfDirectory(atPath: first.bondDirectory.path).first)
        let files = try FileManager.default.contentsOfDirectory(atPath: first.bondDirectory.appendingPathComponent(adapter).path)
        let file = try String(contentsOf: first.bondDirectory.appendingPathComponent(adapter).appendingPathComponent(try #require(files.first { $0.hasSuffix("-random") })), encoding: .utf8)
        let cccd = String(valueHandle + 1, radix: 16, uppercase: true)
        #expect(file.contains("\ngatt.cccd=" + String(repeating: "0", count: 4 - cccd.count) + cccd + ":0001\n"), "\(file)")

        let second = try Server(port: peer.port, ["--io", "no-io", "--notify", "2A19"], bondDirectory: first.bondDirectory)
        defer { second.stop() }
        var printedAgain = second.lines.makeAsyncIterator()
        try peer.send(["reconnect": [String: Any]()])
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["encrypt": [String: Any]()])
        _ = try await ResponderRadioTests.next("encrypted", in: &lines)
        try peer.send(["listen": "2A19"])
        _ = try await ResponderRadioTests.next("listening", in: &lines)
        // The new process reports the subscription it restored from the bond file.
        #expect(try await Server.next("subscribe ", in: &printedAgain) == subscribed)
        try second.send("hello")
        let notification = try await ResponderRadioTests.next("notification", in: &lines)
        #expect(notification["value"] as? String == "68656c6c6f")
    }

    @Test("Signed Write Commands from Bumble with the CSRK it distributed: a rising SignCounter is applied, a replayed one is dropped, on the pairing's encrypted link and on a later unencrypted one")
    func signedWrites() async throws {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "none"])
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let server = try Server(port: peer.port, ["--io", "no-io"])
        defer { server.stop() }
        var printed = server.lines.makeAsyncIterator()
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        try peer.send(["pair": [String: Any]()])
        _ = try await ResponderRadioTests.next("paired", in: &lines)
        _ = try await Server.next("paired ", in: &printed)

        /// Sends a signed write of `value` (hex) with `counter`, then reads the value back.
        func write(_ value: String, counter: Int) async throws -> String? {
            try peer.send(["signedWrite": ["uuid": Self.signed, "value": value, "counter": counter]])
            _ = try await ResponderRadioTests.next("signedWrite", in: &lines)
            try peer.send(["read": Self.signed])
            return try await ResponderRadioTests.next("read", in: &lines)["value"] as? String
        }
        // The write is applied once its signature is verified: wait for ble serve's line
        // before reading it back.
        try peer.send(["signedWrite": ["uuid": Self.signed, "value": "41", "counter": 1]])
        _ = try await ResponderRadioTests.next("signedWrite", in: &lines)
        let applied = try await Server.next("write ", in: &printed)
        #expect(applied.hasPrefix("write \(Self.central) \(Self.signed) handle 0x") && applied.contains(": 0x41 "), "\(applied)")
        // The same SignCounter again, with another value: dropped without an answer (Write
        // Command), the value unchanged.
        #expect(try await write("42", counter: 1) == "41")

        // A later link, not encrypted: the bond's CSRK still verifies; its counter goes on.
        try peer.send(["reconnect": [String: Any]()])
        _ = try await ResponderRadioTests.next("connected", in: &lines)
        #expect(try await write("43", counter: 0) == "41")          // below the last one: dropped
        try peer.send(["signedWrite": ["uuid": Self.signed, "value": "44", "counter": 2]])
        _ = try await ResponderRadioTests.next("signedWrite", in: &lines)
        #expect(try await Server.next("write ", in: &printed).contains(": 0x44 "))
        try peer.send(["read": Self.signed])
        #expect(try await ResponderRadioTests.next("read", in: &lines)["value"] as? String == "44")
    }
}
