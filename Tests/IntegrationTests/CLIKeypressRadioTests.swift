import Foundation
import Testing
import BLETestSupport

/// `ble pair` typed on a terminal (a pseudo-terminal the test types into) against Bumble's
/// "keypress" peer (Fixtures/peers/scenarios/security-extras.json: Keyboard Display, MITM,
/// passkey 123456, Keypress set in AuthReq), which lists the Pairing Keypress Notifications it
/// received (Vol 3, Part H, 3.5.8) in characteristic 5EC00005.
@Suite(.serialized) struct CLIKeypressRadioTests {
    static let keypressLog = "5EC00005-0000-1000-8000-00805F9B34FB"

    static func bondDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Types 7 7 Ctrl-U 1 2 9 Backspace 3 4 5 6 Enter: each key reaches the peer as it is typed.
    @Test(.timeLimit(.minutes(2)))
    func eachKeyTypedIsReportedToThePeerAndTheTerminalIsRestored() async throws {
        let dir = try Self.bondDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("keypress")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let session = try TerminalSession(d + ["pair", device, "--io", "keyboard-only"])
            let modes = session.localModes
            #expect(modes & tcflag_t(ICANON | ECHO) == tcflag_t(ICANON | ECHO))
            let prompt = "passkey shown on \(device) (Enter when done): "
            _ = await session.stderr(until: prompt)
            // While the passkey is asked for, the terminal hands over each key: no line mode, no echo.
            #expect(session.localModes & tcflag_t(ICANON | ECHO) == 0)
            session.type(Array("77".utf8) + [0x15] + Array("129".utf8) + [0x7F] + Array("3456\r".utf8))
            let run = await session.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")
            // The tool echoes the digits and erases them itself.
            #expect(run.stderr.contains(prompt + "77\u{08} \u{08}\u{08} \u{08}129\u{08} \u{08}3456\n"), "\(run.stderr)")
            #expect(session.localModes == modes)

            // Started (0x00), entered 7 7 (0x01), cleared (0x03), entered 1 2 9, erased (0x02),
            // entered 3 4 5 6, completed (0x04): Keypress Notification Types, Vol 3, Part H, 3.5.8.
            let log = try await BLETool.run(d + ["read", device, "-c", Self.keypressLog, "--json"])
            #expect(log.status == 0, "\(log.stderr)")
            let value = try #require(try BLETool.jsonLines(log).first)
            #expect(value["hex"] as? String == "00010103010101020101010104")
        }
    }

    /// From a pipe the passkey is a line, as before: no keypress notifications are asked for.
    @Test(.timeLimit(.minutes(2)))
    func aPasskeyFromAPipeIsReadAsALine() async throws {
        let dir = try Self.bondDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("keypress")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let session = try TerminalSession(d + ["pair", device, "--io", "keyboard-only"], stdin: .pipe)
            session.type(Array("123456\n".utf8))
            session.closeInput()
            let run = await session.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")
            #expect(run.stderr.contains("passkey shown on \(device): \n"), "\(run.stderr)")
            let log = try await BLETool.run(d + ["read", device, "-c", Self.keypressLog, "--json"])
            #expect(try BLETool.jsonLines(log).first?["hex"] as? String == "")
        }
    }

    /// Ctrl-C while the passkey is typed: the tool stops (status 130) and puts the terminal
    /// back; so does SIGTERM (status 143).
    @Test(.timeLimit(.minutes(2)))
    func ctrlCOrSIGTERMWhileTypingRestoresTheTerminal() async throws {
        let dir = try Self.bondDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("keypress")).address
            let session = try TerminalSession(["-d", radio.transportSpec, "--bond-dir", dir.path, "pair", device, "--io", "keyboard-only"])
            let modes = session.localModes
            let prompt = "passkey shown on \(device) (Enter when done): "
            _ = await session.stderr(until: prompt)
            session.type(Array("12".utf8))
            _ = await session.stderr(until: prompt + "12")
            session.interrupt()
            let run = await session.finish()
            #expect(run.status == 130, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            #expect(session.localModes == modes)

            // SIGTERM (or SIGQUIT from Ctrl-\) ends it too: through exit, with the terminal put back.
            let killed = try TerminalSession(["-d", radio.transportSpec, "--bond-dir", dir.path, "pair", device, "--io", "keyboard-only"])
            _ = await killed.stderr(until: prompt)
            killed.type(Array("1".utf8))
            _ = await killed.stderr(until: prompt + "1")
            kill(killed.process.pid, SIGTERM)
            #expect(await killed.finish().status == 128 + SIGTERM)
            #expect(killed.localModes == modes)
        }
    }
}
