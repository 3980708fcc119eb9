import Foundation
import Testing
import BLECore
import BLETestSupport
import BLEWire

/// `ble serve` as a process: the database from Fixtures/gatt/serve.yaml, Bumble's GATT client
/// as the central (Fixtures/peers/gatt_central.py, scenario "serve") reads, writes and
/// subscribes, a stdin line goes out as a notification, the link ends and a second link reads
/// what the first wrote; then SIGTERM. And a bad file, without a radio.
@Suite("ble serve", .timeLimit(.minutes(2)))
struct CLIServeRadioTests {
    static let long = "12345678-1234-5678-1234-56789ABCDEF1"
    static let command = "12345678-1234-5678-1234-56789ABCDEF2"

    @Test("Bumble reads, writes and subscribes; a stdin line is notified; a written value is read on the next link; SIGTERM exits 0")
    func serveEndToEnd() async throws {
        let peer = try await GATTCentralPeer(scenario: "serve")
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "BLE_LOG")
        let process = try ChildProcess(
            path: BLETool.executable.path,
            ["-d", "tcp:127.0.0.1:\(peer.port)", "serve", BLETool.fixture("gatt/serve.yaml").path, "--name", "serve-test", "--notify", "2A19"],
            environment: environment, stdin: .pipe, stdout: .pipe, stderr: .secondPipe)
        defer { if let input = process.input { close(input) } }
        // The bound: the tool is killed 90 s after its start whatever happens.
        let exit = Task { await process.exitStatus(killingAfter: .seconds(90)) }
        defer { exit.cancel() } // a test that fails early kills it at once
        let (printedLines, feed) = AsyncStream<String>.makeStream()
        let pending = PeripheralRadioTests.PendingText()
        PipeReader.start(process.pipe ?? -1, chunk: { for line in pending.append($0) { feed.yield(line) } }, end: { feed.finish() })
        let (stderrChunks, stderrFeed) = AsyncStream<[UInt8]>.makeStream()
        PipeReader.start(process.secondPipe ?? -1, chunk: { stderrFeed.yield($0) }, end: { stderrFeed.finish() })
        var printed: [String] = []
        var toolLines = printedLines.makeAsyncIterator()

        // Flags 06 | 0B 09 "serve-test" | 03 03 0F 18: the name and the Battery service.
        let advertisement = try await GATTCentralPeer.next("advertisement", in: &lines) as? [String: Any]
        #expect(advertisement?["data"] as? String == "020106" + "0b09" + "73657276652d74657374" + "03030f18")
        let characteristics = try await GATTCentralPeer.next("characteristics", in: &lines)
        let level = try #require(GATTCentralPeer.handle(of: "2A19", in: characteristics))
        let long = try #require(GATTCentralPeer.handle(of: Self.long, in: characteristics))
        #expect(GATTCentralPeer.handle(of: Self.command, in: characteristics) == long + 3) // after long's User Description
        #expect((try await GATTCentralPeer.next("read", in: &lines) as? [String: Any])?["value"] as? String == "64")
        #expect(try await GATTCentralPeer.next("subscribed", in: &lines) as? Bool == true)
        try process.send(Array("hello\n".utf8))
        #expect((try await GATTCentralPeer.next("notification", in: &lines) as? [String: Any])?["value"] as? String == "68656c6c6f")
        // The second link reads what the first wrote.
        #expect((try await GATTCentralPeer.next("read_again", in: &lines) as? [String: Any])?["value"] as? String
                == "7772697474656e2062792062756d626c65")
        _ = try await GATTCentralPeer.next("done", in: &lines)
        // The tool reports the second link's end before it is stopped.
        while printed.filter({ $0.hasPrefix("disconnected ") }).count < 2, let line = await toolLines.next() { printed.append(line) }
        kill(process.pid, SIGTERM)
        let status = await exit.value
        while let line = await toolLines.next() { printed.append(line) }
        var stderrBytes: [UInt8] = []
        for await chunk in stderrChunks { stderrBytes += chunk }
        let stderr = String(decoding: stderrBytes, as: UTF8.self)
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("SIGTERM: stopping"), "\(stderr)")
        func at(_ h: Int) -> String { "handle 0x" + String(format: "%04X", h) }
        let peerAddress = GATTCentralPeer.centralAddress
        #expect(printed.filter { !$0.hasPrefix("sent ") } == [
            "connected \(peerAddress)",
            "read \(peerAddress) 2A19 \(at(level)): 0x64 (1 byte, uint 100, \"d\") -> 100 %",
            "write \(peerAddress) \(Self.long) \(at(long)): 0x7772697474656E2062792062756D626C65 (17 bytes, \"written by bumble\")",
            "write \(peerAddress) \(Self.command) \(at(long + 3)): 0x636D64 (3 bytes, \"cmd\")",
            "subscribe \(peerAddress) 2A19 \(at(level)): notifications",
            "disconnected \(peerAddress)",
            "connected \(peerAddress)",
            "read \(peerAddress) \(Self.long) \(at(long)): 0x7772697474656E2062792062756D626C65 (17 bytes, \"written by bumble\")",
            "disconnected \(peerAddress)",
        ], "\(printed)")
        // The Battery Level decoder's reading of 5 octets, as `ble read` shows it.
        #expect(printed.contains("sent 2A19: 0x68656C6C6F (5 bytes, \"hello\") -> malformed Battery Level (notified 1, indications confirmed 0)"), "\(printed)")
    }

    @Test("Ctrl-C: advertising is disabled (LE Set Advertising Enable 0x00 in the btsnoop) and the tool exits 130")
    func interruptStopsAdvertising() async throws {
        let peer = try await PeripheralRadioTests.BumbleCentral(connect: false)
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let snoop = FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-\(UUID().uuidString).btsnoop")
        defer { try? FileManager.default.removeItem(at: snoop) }
        let process = try ChildProcess(path: BLETool.executable.path, [
            "-d", "tcp:127.0.0.1:\(peer.port)", "--btsnoop", snoop.path, "serve", BLETool.fixture("gatt/serve.yaml").path, "--name", "serve-test",
        ])
        // The bound: the tool is killed 60 s after its start whatever happens.
        let exit = Task { await process.exitStatus(killingAfter: .seconds(60)) }
        defer { exit.cancel() }
        let seen = try await PeripheralRadioTests.next("advertisement", in: &lines)
        #expect(seen["data"] as? String == "020106" + "0b09" + "73657276652d74657374" + "03030f18")
        kill(process.pid, SIGINT)
        #expect(await exit.value == 130)
        let records = try BTSnoopReader(bytes: Array(try Data(contentsOf: snoop))).records
        // LE Set Advertising Enable (Vol 4, Part E, 7.8.9, opcode 0x200A): 0x01, then 0x00 at the end.
        let enables: [[UInt8]] = records.compactMap {
            guard case .command(let c) = $0.packet, c.opcode.rawValue == 0x200A else { return nil }
            return Array(c.parameters)
        }
        #expect(enables == [[0x01], [0x00]])
    }

    @Test("A bad database file is one line naming the line and the key, exit 2, before any controller is opened")
    func badFileNamesTheKey() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-bad-\(UUID().uuidString).yaml")
        try Data("services:\n  - uuid: 180F\n    characteristics:\n      - uuid: 2A19\n        properties: [reed]\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await BLETool.run(["-d", "tcp:127.0.0.1:1", "serve", file.path])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderrLines == ["ble: \(file.path), line 5: services[0].characteristics[0].properties: unknown property 'reed' (one of authenticatedSignedWrites, broadcast, extendedProperties, indicate, notify, read, write, writeWithoutResponse)"])
    }

    @Test("A missing key is reported at the line of the mapping that lacks it; JSON errors name the key")
    func missingKeyLineAndJSON() async throws {
        let yaml = FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-missing-\(UUID().uuidString).yaml")
        try Data("services:\n  - uuid: 180F\n    characteristics:\n      - properties: [read]\n".utf8).write(to: yaml)
        defer { try? FileManager.default.removeItem(at: yaml) }
        let missing = try await BLETool.run(["-d", "tcp:127.0.0.1:1", "serve", yaml.path])
        #expect(missing.status == 2)
        #expect(missing.stderrLines == ["ble: \(yaml.path), line 4: services[0].characteristics[0].uuid: missing"])
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("ble-serve-bad-\(UUID().uuidString).json")
        try Data(#"{"services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "propertes": ["read"]}]}]}"#.utf8).write(to: json)
        defer { try? FileManager.default.removeItem(at: json) }
        let misspelt = try await BLETool.run(["-d", "tcp:127.0.0.1:1", "serve", json.path])
        #expect(misspelt.status == 2)
        #expect(misspelt.stderrLines == ["ble: \(json.path): services[0].characteristics[0].propertes: unknown key (one of description, maximumLength, permissions, properties, uuid, value)"])
    }

    @Test("--notify must name a characteristic that notifies or indicates")
    func notifyNeedsANotifyingCharacteristic() async throws {
        let run = try await BLETool.run(["-d", "tcp:127.0.0.1:1", "serve", BLETool.fixture("gatt/serve.yaml").path, "--notify", Self.long])
        #expect(run.status == 2)
        #expect(run.stderrLines == ["ble: --notify \(Self.long): the characteristic has neither notify nor indicate in its properties in \(BLETool.fixture("gatt/serve.yaml").path)"])
    }
}
