import BLETestSupport
import Foundation
import Testing

/// The live scan table on a real terminal: `ble scan` runs in a tmux pane against fakes of
/// the "all" scenario's devices (`FakeRadio`); the captured screen must show the scenario's device names, and Ctrl-C
/// must end the tool with status 130.
@Suite(.serialized) struct CLILiveTableTests {
    /// Runs tmux on a server of its own (`-L socket`), so the test never touches the user's
    /// sessions and can end the server it started. Through system(3) rather than Process: the
    /// server that `new-session` forks keeps the client's descriptors, which Process watches
    /// to learn that its child ended. Output, when wanted, goes through a file.
    static func tmux(_ socket: String, _ args: [String], capture: Bool = false) throws -> String {
        func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let command = (["/usr/bin/tmux", "-L", socket] + args).map(quote).joined(separator: " ")
            + " </dev/null 2>/dev/null >" + (capture ? quote(file.path) : "/dev/null")
        let status = system(command)
        guard capture else { return "" }
        #expect(status == 0, "\(command)")
        return (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }

    /// Captures the pane until `done` holds or `limit` seconds pass (the terminal gives no
    /// event to wait on; each capture is a fresh `tmux capture-pane`).
    static func screen(_ socket: String, within limit: Double, until done: (String) -> Bool) async throws -> String {
        let deadline = Date().addingTimeInterval(limit)
        var text = ""
        repeat {
            text = try tmux(socket, ["capture-pane", "-p", "-t", "ble"], capture: true)
            if done(text) { return text }
            try await Task.sleep(for: .milliseconds(250))
        } while Date() < deadline
        return text
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")))
    func liveTableShowsDeviceNamesAndCtrlCExits130() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor(), FakePeers.lab(), FakePeers.battery()])
        defer { radio.close() }
        let spec = try radio.fake.servePseudoTerminal()
        let socket = "ble-cli-test-\(getpid())"
        // The shell survives the Ctrl-C (its trap runs in the shell only) to print the status.
        let command = "trap true INT; \(BLETool.executable.path) -d \(spec) scan; echo EXIT=$?; read _"
        _ = try Self.tmux(socket, ["new-session", "-d", "-s", "ble", "-x", "160", "-y", "30", "env -u NO_COLOR sh -c '\(command)'"])
        defer {
            _ = try? Self.tmux(socket, ["kill-server"])
            try? FileManager.default.removeItem(atPath: "/tmp/tmux-\(getuid())/\(socket)")
        }
        let names = ["Polar H10 sim", "Lab sim", "Battery sim"]
        let screen = try await Self.screen(socket, within: 15) { s in names.allSatisfy(s.contains) }
        for name in names { #expect(screen.contains(name), "screen:\n\(screen)") }
        #expect(screen.contains("ADDRESS"))
        #expect(screen.contains("F0:5E:B1:00:00:02/random"))
        #expect(screen.contains("Ctrl-C to stop"))
        _ = try Self.tmux(socket, ["send-keys", "-t", "ble", "C-c"])
        let after = try await Self.screen(socket, within: 10) { $0.contains("EXIT=") }
        #expect(after.contains("EXIT=130"), "screen:\n\(after)")
    }
}
