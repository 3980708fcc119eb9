import BLETestSupport
import Foundation
import Testing

/// The live scan table on a real terminal: `ble scan` runs in a tmux pane against the
/// virtual radio; the captured screen must show the scenario's device names, and Ctrl-C
/// must end the tool with status 130.
@Suite(.serialized) struct CLILiveTableTests {
    static func tmux(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["tmux"] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Captures the pane until `done` holds or `limit` seconds pass (the terminal gives no
    /// event to wait on; each capture is a fresh `tmux capture-pane`).
    static func screen(_ session: String, within limit: Double, until done: (String) -> Bool) async throws -> String {
        let deadline = Date().addingTimeInterval(limit)
        var text = ""
        repeat {
            text = try tmux(["capture-pane", "-p", "-t", session])
            if done(text) { return text }
            try await Task.sleep(for: .milliseconds(250))
        } while Date() < deadline
        return text
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")))
    func liveTableShowsDeviceNamesAndCtrlCExits130() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let session = "ble-cli-\(getpid())"
            // The shell survives the Ctrl-C (its trap runs in the shell only) to print the status.
            let command = "trap true INT; \(BLETool.executable.path) -d \(radio.transportSpec) scan; echo EXIT=$?; read _"
            _ = try Self.tmux(["new-session", "-d", "-s", session, "-x", "160", "-y", "30", "env -u NO_COLOR sh -c '\(command)'"])
            defer { _ = try? Self.tmux(["kill-session", "-t", session]) }
            let names = ["Lab sim", "Battery sim"]
            let screen = try await Self.screen(session, within: 15) { s in names.allSatisfy(s.contains) }
            for name in names { #expect(screen.contains(name), "screen:\n\(screen)") }
            #expect(screen.contains("ADDRESS"))
            #expect(screen.contains("F0:5E:B1:00:00:02/random"))
            #expect(screen.contains("Ctrl-C to stop"))
            _ = try Self.tmux(["send-keys", "-t", session, "C-c"])
            let after = try await Self.screen(session, within: 10) { $0.contains("EXIT=") }
            #expect(after.contains("EXIT=130"), "screen:\n\(after)")
        }
    }
}
