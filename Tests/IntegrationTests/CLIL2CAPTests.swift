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

    @Test func copiesAFileThroughTheEchoServer() async throws {
        try await VirtualRadio.with(scenario: "l2cap") { radio in
            var g = SystemRandomNumberGenerator()
            let data = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &g) }
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "0x0080", "--mtu", "65535", "--idle", "1"], input: data)
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
            let (run, output) = try await Self.runWithFiles(["-d", radio.transportSpec, "l2cap", "F0:5E:B1:00:00:21", "--psm", "130", "--json", "--idle", "1"], input: Array("hello\n".utf8))
            #expect(run.status == 0, "\(run.stderr)")
            let line = try #require(String(decoding: output, as: UTF8.self).split(separator: "\n").first)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["hex"] as? String == "68656c6c6f0a")
            #expect(object["length"] as? Int == 6)
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
}
