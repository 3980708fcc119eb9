import BLETestSupport
import Foundation
import Testing
import BLEWire

/// The live scan table on a real terminal: `ble scan` runs in a tmux pane against fakes of
/// the "all" scenario's devices (`FakeRadio`), the beacons of `CLIScanDataTests` and a device
/// whose name carries an escape sequence; the captured screen must show the device names,
/// the decoded service data, the TX column and the hostile name escaped, and Ctrl-C must end
/// the tool with status 130.
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

    static let evil = "F0:5E:B1:00:00:23"

    /// Advertises the complete local name ESC "[2Jevil" (ESC [ 2 J erases a terminal's screen)
    /// and Service Data for 180F (Battery) 0x5A; AD structures as in `CLIScanDataTests`.
    static func hostileName() -> FakePeripheral {
        let name = Array("\u{1B}[2Jevil".utf8)
        let ad: [UInt8] = [0x02, 0x01, 0x06]                             // flags
            + [UInt8(name.count + 1), 0x09] + name                        // complete local name
            + [0x04, 0x16, 0x0F, 0x18, 0x5A]                              // service data 180F: 5a
        return FakePeripheral(name: nil, address: FakePeers.address(evil), advertisement: AdvertisingData(bytes: ad))
    }

    /// The row of the device at `address` on the screen, split at blanks: address, name,
    /// RSSI, TX, ... (the names of these rows have no blanks; the iBeacon advertises none: "-").
    static func cells(_ screen: String, _ address: String) -> [String] {
        let line = screen.split(separator: "\n").first { $0.hasPrefix(address) } ?? ""
        return line.split(separator: " ").map(String.init)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")))
    func liveTableShowsDeviceNamesAndCtrlCExits130() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor(), FakePeers.lab(), FakePeers.battery()]
                              + CLIScanDataTests.devices() + [Self.hostileName()])
        defer { radio.close() }
        let spec = try radio.fake.servePseudoTerminal()
        let socket = "ble-cli-test-\(getpid())"
        // The shell survives the Ctrl-C (its trap runs in the shell only) to print the status.
        let command = "trap true INT; \(BLETool.executable.path) -d \(spec) scan; echo EXIT=$?; read _"
        _ = try Self.tmux(socket, ["new-session", "-d", "-s", "ble", "-x", "200", "-y", "30", "env -u NO_COLOR sh -c '\(command)'"])
        defer {
            _ = try? Self.tmux(socket, ["kill-server"])
            try? FileManager.default.removeItem(atPath: "/tmp/tmux-\(getuid())/\(socket)")
        }
        // The hostile name shown as text: a backslash, "x1b", then the rest.
        let names = ["Polar H10 sim", "Lab sim", "Battery sim", "Eddy", "\\x1b[2Jevil"]
        let screen = try await Self.screen(socket, within: 15) { s in names.allSatisfy(s.contains) && s.contains(Self.evil) }
        for name in names { #expect(screen.contains(name), "screen:\n\(screen)") }
        #expect(screen.contains("ADDRESS"))
        #expect(screen.contains("F0:5E:B1:00:00:02/random"))
        // The DATA column: the Eddystone-URL frame and the iBeacon decoded (the iBeacon's
        // summary is longer than the column, cut with "~"), plain service data as UUID=hex.
        #expect(screen.contains("Eddystone-URL https://example.com tx@0m -24 dBm"), "screen:\n\(screen)")
        #expect(screen.contains("iBeacon E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 major 1 minor"), "screen:\n\(screen)")
        #expect(screen.contains("180F=5a"), "screen:\n\(screen)")
        // The TX column: the advertised TX Power Level (AD 0x0A), "-" where none is advertised.
        let eddy = Self.cells(screen, CLIScanDataTests.eddystone)
        #expect(eddy.count > 3 && eddy[1] == "Eddy" && eddy[3] == "4", "\(eddy)")
        let beacon = Self.cells(screen, CLIScanDataTests.ibeacon)
        #expect(beacon.count > 3 && beacon[3] == "-", "\(beacon)")
        #expect(screen.contains("Ctrl-C to stop"))
        _ = try Self.tmux(socket, ["send-keys", "-t", "ble", "C-c"])
        let after = try await Self.screen(socket, within: 10) { $0.contains("EXIT=") }
        #expect(after.contains("EXIT=130"), "screen:\n\(after)")
    }
}
