import BLETestSupport
import Foundation
import Testing
@testable import BLEGateway

/// "Config file and flags for everything": docs/gateway.md's table of flags and config keys
/// against the config file's keys and `ble gateway --help`.
@Suite struct GatewayFlagsTests {
    /// One row of the table under "## Running": its flags and its config keys.
    struct Row {
        var flags: [String]
        var keys: [String]
        var text: String
    }

    static func documentedRows() throws -> [Row] {
        let docs = try String(contentsOf: GatewayProcessTests.packageRoot.appendingPathComponent("docs/gateway.md"), encoding: .utf8)
        let table = try #require(docs.components(separatedBy: "| Flag | Config key |").dropFirst().first)
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2).prefix { $0.hasPrefix("|") }
        return lines.map { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            return Row(flags: Self.matches(#"--[a-z0-9-]+"#, in: cells[1]), keys: Self.matches(#"(?<=`)[A-Za-z.]+(?=`)"#, in: cells[2]),
                       text: String(line))
        }
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
    }

    /// Every key the config file takes is in the table, and the table names no other; a key
    /// without a flag says why ("config file only").
    @Test func everyConfigKeyIsDocumentedWithAFlagOrAReason() throws {
        let rows = try Self.documentedRows()
        #expect(Set(rows.flatMap(\.keys)) == Set(GatewayConfig.fileKeys))
        for row in rows where row.flags.isEmpty {
            #expect(row.text.contains("config file only"), "no flag and no reason: \(row.text)")
        }
    }

    /// The flags in the table are the options `ble gateway --help` lists, no more, no fewer.
    @Test func documentedFlagsAreTheHelpsOptions() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("gwhelp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let child = try Child(path: GatewayProcessTests.ble, ["gateway", "--help"], stdout: .file(out))
        #expect(await child.waitForExit(timeout: .seconds(20)) == 0)
        let help = try String(contentsOfFile: out, encoding: .utf8)
        let options = try #require(help.components(separatedBy: "\nOptions:\n").dropFirst().first?.components(separatedBy: "\nGlobal options:").first)
        let listed = options.split(separator: "\n").compactMap { Self.matches(#"^\s+(-\w, )?--[a-z0-9-]+"#, in: String($0)).first }
            .compactMap { Self.matches(#"--[a-z0-9-]+"#, in: $0).first }
        #expect(listed.count > 20, "\(help)")
        #expect(Set(try Self.documentedRows().flatMap(\.flags)) == Set(listed))
    }

    /// `ble gateway` takes the password from `--password-file` (its final line break is not
    /// part of it) and the broker timing flags: a broker that wants the password lets it in.
    @Test func passwordFileAndBrokerFlagsGetTheGatewayOnline() async throws {
        let secrets = try BrokerSecrets.make()
        try await secrets.writePasswords(["hall": "secret", "watcher": "w"])
        let broker = try await Broker.start(settings: "allow_anonymous false\npassword_file \(secrets.passwordFile)")
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#") { $0.username = "watcher"; $0.password = "w" }
        let passwordFile = secrets.directory.appendingPathComponent("gateway-password")
        try "secret\n".write(to: passwordFile, atomically: true, encoding: .utf8)
        var options = VirtualController.Options()
        options.time = .immediate
        let vc = VirtualController(options: options)
        let gateway = try Child(path: GatewayProcessTests.ble, [
            "-d", try vc.servePseudoTerminal(), "gateway", "--mqtt", broker.url, "--id", "gwpw", "--no-scan",
            "--username", "hall", "--password-file", passwordFile.path, "--insecure-tls",
            "--keep-alive", "10", "--reconnect-delay", "0.2", "--reconnect-max-delay", "2",
        ])
        #expect(try await watcher.next("ble/gwpw/status").text == "online")
        // A SIGTERM'd gateway exits 0 within 8 s (docs/gateway.md); 2 s more for a loaded
        // machine to run the exiting process. SIGKILL (status 137) only after 12 s.
        let stopping = ContinuousClock.now
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit(timeout: .seconds(12)) == 0)
        let stopped = ContinuousClock.now - stopping
        #expect(stopped < .seconds(10), "\(stopped)")
        _ = try await watcher.next("ble/gwpw/status") { $0.text == "offline" }
        withExtendedLifetime(vc) {}
        await watcher.stop()
    }
}
