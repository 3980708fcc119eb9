import Foundation
import Testing
import BLETestSupport

/// `ble l2cap` against the strict Bumble channel servers of the "l2cap" scenario.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CLIL2CAPTests {
    /// Runs `ble ARGS < input > output` through /bin/sh, so stdin and binary stdout are files.
    static func runWithFiles(_ arguments: [String], input: [UInt8]) async throws -> (BLETool.Run, [UInt8]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-l2cap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inURL = dir.appendingPathComponent("in"), outURL = dir.appendingPathComponent("out")
        try Data(input).write(to: inURL)
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        env.removeValue(forKey: "BLE_DEVICE")
        let run = try await Subprocess.run(URL(fileURLWithPath: "/bin/sh"),
                                           ["-c", "exec \"$0\" \"$@\" < '\(inURL.path)' > '\(outURL.path)'", BLETool.executable.path] + arguments,
                                           environment: env, killAfter: .seconds(90))
        let output = (try? Data(contentsOf: outURL)).map { [UInt8]($0) } ?? []
        return (BLETool.Run(status: run.status, stdout: run.stdout, stderr: run.stderr), output)
    }

    // `--idle 3` where Bumble echoes: the command ends once no K-frame came for that long, and
    // a Python peer beside the qemu lanes was seen to pause over a second between echoes.
    @Test func copiesAFileThroughTheEchoServer() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            var g = SystemRandomNumberGenerator()
            let data = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &g) }
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0080", "--mtu", "65535", "--idle", "3"], input: data)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(output.count == data.count)
            let same = output == data
            #expect(same, "the bytes that came back differ")
            #expect(run.stderr.contains("sent 200000 bytes"), "\(run.stderr)")
            #expect(run.stderr.contains("received 200000 bytes"), "\(run.stderr)")
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"))
        }
    }

    @Test func jsonPrintsSDUsAsHex() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "130", "--json", "--idle", "3"], input: Array("hello\n".utf8))
            #expect(run.status == 0, "\(run.stderr)")
            let line = try #require(String(decoding: output, as: UTF8.self).split(separator: "\n").first)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["hex"] as? String == "68656c6c6f0a")
            #expect(object["length"] as? Int == 6)
        }
    }

    /// Scenario "l2cap-security": PSM 0x0090 refuses a plain link with 0x0008. Without
    /// --security the refusal pairs (Just Works, no terminal) and the channel is asked for
    /// again; with --security encrypted the link is paired before the request.
    @Test func channelThatNeedsEncryptionPairs() async throws {
        try await VirtualRadio.with(scenario: "l2cap-security") { radio in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-l2cap-bonds-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: dir) }
            let input = Array("over an encrypted link\n".utf8)
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path, "l2cap", "F0:5E:B1:00:00:51", "--psm", "0x0090", "--idle", "3"]
            let (run, output) = try await Self.runWithFiles(d, input: input)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(output == input)
            let refusal = "PSM 0x0090 needs encrypted, the link is none: refused with result 0x0008"
            #expect(radio.recentLog.components(separatedBy: refusal).count == 2, "\(radio.recentLog)")
            let (secured, echoed) = try await Self.runWithFiles(d + ["--security", "encrypted"], input: input)
            #expect(secured.status == 0, "\(secured.stderr)")
            #expect(echoed == input)
            #expect(radio.recentLog.components(separatedBy: refusal).count == 2, "\(radio.recentLog)")
        }
    }

    @Test func refusedPSMFails() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            let (run, _) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0099"], input: [])
            #expect(run.status == 1)
            #expect(run.stderr.contains("refused the L2CAP channel to PSM 0x0099: SPSM not supported (0x0002)"), "\(run.stderr)")
        }
    }

    @Test func psmOrListenIsRequired() async throws {
        let run = try await BLETool.run(["l2cap", "F0:5E:B1:00:00:21"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--psm PSM"))
    }

    @Test func kernelAdapterRefusesTheOwnStacksOptions() async throws {
        let mps = try await BLETool.run(["-d", "hci-raw:0", "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0080", "--mps", "100"])
        #expect(mps.status == 2)
        #expect(mps.stderr.contains("--mps is for the stack's own channels; with -d hci-raw:0 the kernel's socket carries the channel"), "\(mps.stderr)")
        let snoop = try await BLETool.run(["-d", "hci-raw:1", "--btsnoop", "/tmp/never.btsnoop", "l2cap", "F0:5E:B1:00:00:21", "--listen", "0x0081"])
        #expect(snoop.status == 2)
        #expect(snoop.stderr.contains("record hci1's traffic with 'ble monitor -i hci1 --btsnoop FILE'"), "\(snoop.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never.btsnoop"))
        // The same options on the stack's own path are fine up to opening the controller.
        let both = try await BLETool.run(["-d", "hci-raw:0", "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0080", "--listen", "0x0081"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("give either --psm PSM (open a channel) or --listen PSM (accept one)"), "\(both.stderr)")
    }

    /// On a host kernel without Bluetooth, `-d hci-raw:0` takes the kernel's L2CAP socket (its
    /// error, not the raw HCI channel's) and exits 1.
    @Test(.enabled(if: !L2CAPSocketChannelNoBluetoothTests.kernelHasBluetooth))
    func kernelAdapterUsesTheKernelsSocket() async throws {
        for mode in ["--psm", "--listen"] {
            let run = try await BLETool.run(["-d", "hci-raw:0", "l2cap", "F0:5E:B1:00:00:21", mode, "0x0080"])
            #expect(run.status == 1)
            #expect(run.stderrLines.last == "ble: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); load it with 'modprobe bluetooth'", "\(run.stderr)")
        }
    }

    /// The summary line on stderr, parsed field by field.
    struct Summary {
        var bytesSent = 0, sdusSent = 0, bytesReceived = 0, sdusReceived = 0
        var seconds = 0.0, kilobytesPerSecond = 0.0, creditStalls = 0
        var closedByPeer = false

        init?(_ stderr: String) {
            let pattern = /sent (\d+) bytes in (\d+) SDUs, received (\d+) bytes in (\d+) SDUs in ([0-9.]+) s \(([0-9.]+) kB\/s\); waited for credits (\d+) times(; the peer closed the channel)?/
            guard let m = stderr.firstMatch(of: pattern),
                  let a = Int(m.1), let b = Int(m.2), let c = Int(m.3), let d = Int(m.4),
                  let s = Double(m.5), let r = Double(m.6), let z = Int(m.7) else { return nil }
            (bytesSent, sdusSent, bytesReceived, sdusReceived, seconds, kilobytesPerSecond, creditStalls) = (a, b, c, d, s, r, z)
            closedByPeer = m.8 != nil
        }
    }

    @Test func summaryCarriesThroughputAndCreditStalls() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            var g = SystemRandomNumberGenerator()
            let data = (0..<10_000).map { _ in UInt8.random(in: 0...255, using: &g) }
            // PSM 130 starts with one credit and grants one per K-frame (MPS 100): every SDU
            // of up to 2048 bytes waits for credits.
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "130", "--idle", "3"], input: data)
            #expect(run.status == 0, "\(run.stderr)")
            let same = output == data
            #expect(same, "the bytes that came back differ")
            let summary = try #require(Summary(run.stderr), "\(run.stderr)")
            #expect(summary.bytesSent == 10_000 && summary.bytesReceived == 10_000)
            #expect(summary.sdusSent >= 5 && summary.sdusSent <= 10_000)
            #expect(summary.sdusReceived == summary.sdusSent)
            // Each SDU (at least 5, each over one K-frame) waited for credits at least once.
            #expect(summary.creditStalls >= 5, "\(run.stderr)")
            #expect(summary.creditStalls <= summary.sdusSent)
            // kB/s is both directions over the elapsed time, as printed (2 and 1 decimals).
            #expect(summary.seconds > 0 && summary.kilobytesPerSecond > 0)
            let rate = 20.0 / summary.seconds
            #expect(abs(summary.kilobytesPerSecond - rate) <= max(0.1, rate * 0.01), "\(run.stderr)")
            #expect(!summary.closedByPeer)
        }
    }

    @Test func idleDefaultsToTwoSeconds() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            let start = ContinuousClock.now
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0080"], input: Array("ping\n".utf8))
            let wall = ContinuousClock.now - start
            #expect(run.status == 0, "\(run.stderr)")
            #expect(output == Array("ping\n".utf8))
            #expect(Summary(run.stderr) != nil, "\(run.stderr)")
            // The echo comes back at once; the process cannot end before 2 s pass without a
            // K-frame, and it ends on the idle limit, long before the 15 s step timeout.
            #expect(wall >= .seconds(2), "\(wall)")
            #expect(wall < .seconds(12), "\(wall)")
        }
    }

    @Test func listenAcceptsTheDevicesChannelUntilItClosesIt() async throws {
        try await VirtualRadio.with(scenario: "l2cap-links") { radio in
            // "caller" opens a channel to our PSM 0x0090 on each link, writes one SDU, echoes,
            // and closes the channel once 1000 bytes arrived.
            let caller = try #require(radio.device("caller"))
            var g = SystemRandomNumberGenerator()
            let data = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &g) }
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", caller.address, "--listen", "0x0090", "--idle", "20"], input: data)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("channel open: PSM 0x0090"), "\(run.stderr)")
            let expected = Array("hello from the peer\n".utf8) + data
            let same = output == expected
            #expect(same, "stdout is not the peer's SDU followed by the echo")
            let summary = try #require(Summary(run.stderr), "\(run.stderr)")
            #expect(summary.closedByPeer)
            #expect(summary.bytesSent == 1000 && summary.bytesReceived == 1020)
            // The peer closed the channel: no --idle wait.
            #expect(summary.seconds < 20)
            #expect(!radio.recentLog.contains("L2CAP VIOLATION"))
        }
    }

    /// Scenario "l2cap-accept-security": the device opens a channel to our PSM 0x0095. With
    /// --listen and --security encrypted this side pairs first and serves the PSM only on the
    /// encrypted link, so the device's request is accepted at once (no refusal in its log).
    /// Nothing is sent: Bumble drops a K-frame that arrives before its opener has the channel
    /// (it has no sink yet), and the echo is the library test's (L2CAPAcceptSecurityRadioTests).
    @Test func listenWithSecurityServesTheEncryptedLink() async throws {
        try await VirtualRadio.with(scenario: "l2cap-accept-security") { radio in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-l2cap-bonds-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: dir) }
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "--bond-dir", dir.path, "l2cap", "F0:5E:B1:00:00:61",
                                                             "--listen", "0x0095", "--security", "encrypted", "--idle", "1"], input: [])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(output == Array("hello over an encrypted link\n".utf8), "\(run.stderr)")
            #expect(radio.recentLog.contains("channel to PSM 0x0095 open (link encrypted)"), "\(radio.recentLog)")
            #expect(!radio.recentLog.contains("refused with result"), "\(radio.recentLog)")
        }
    }
}
