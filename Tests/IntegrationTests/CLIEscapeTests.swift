import BLETestSupport
import Foundation
import GATTClient
import Testing
import BLEWire

/// A device whose advertised name and characteristic values carry terminal escape sequences
/// (ESC [2J clears the screen, ESC ] 0;... BEL retitles the window, the C1 CSI U+009B) must not
/// act on the terminal of whoever runs `ble`: text output shows them escaped, JSON keeps the
/// exact text. The device is a fake (`FakeRadio`) declared here.
@Suite(.serialized) struct CLIEscapeTests {
    static let name = "\u{1B}[2J\u{1B}]0;x\u{07}\u{9B}z"
    static let escaped = #"\x1b[2J\x1b]0;x\x07\u{9b}z"#
    static let address = "F0:5E:B1:00:00:0E"

    /// The device, with FFF1 holding a C1 control in its value.
    static func device() -> FakePeripheral {
        FakePeripheral(name: name, address: FakePeers.address(address), services: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read], value: Array("ok\u{9B}31mred".utf8)),
            ]),
        ])
    }

    static func hasControls(_ s: String) -> Bool {
        s.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
    }

    @Test func scanLinesEscapeTheNameAndJSONKeepsIt() async throws {
        let radio = FakeRadio([Self.device()])
        defer { radio.close() }
        let run = try await radio.run(["scan", "--duration", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!Self.hasControls(run.stdout), "\(run.stdout.debugDescription)")
        #expect(run.stdoutLines.first?.contains("\(Self.address)/random") == true)
        #expect(run.stdoutLines.contains { $0.contains("\"\(Self.escaped)\"") }, "\(run.stdout)")

        let json = try await radio.run(["scan", "--json", "--duration", "1"])
        let names = try BLETool.jsonLines(json).compactMap { $0["name"] as? String }
        #expect(names.contains(Self.name))
    }

    @Test func inspectAndReadEscapeValues() async throws {
        let radio = FakeRadio([Self.device()])
        defer { radio.close() }
        let inspect = try await radio.run(["inspect", Self.address, "--read"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(!Self.hasControls(inspect.stdout), "\(inspect.stdout.debugDescription)")
        // Values with C0 controls are not shown as text at all (hex only); C1 ones are escaped.
        #expect(inspect.stdout.contains(#""ok\u{9b}31mred""#), "\(inspect.stdout)")

        let read = try await radio.run(["read", Self.address, "-c", "FFF1"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout.contains(#""ok\u{9b}31mred""#), "\(read.stdout)")
        #expect(!Self.hasControls(read.stdout))
        let json = try await radio.run(["read", Self.address, "-c", "FFF1", "--json"])
        #expect(try BLETool.jsonLines(json).first?["utf8"] as? String == "ok\u{9B}31mred")
    }

    /// On a terminal `ble scan` draws a live table; `script` (util-linux) gives it one. The
    /// table's own sequences (hide the cursor, clear, home) are the tool's; the name's reach
    /// it escaped: no OSC title change, no BEL, no C1 CSI.
    @Test func scanTableOnATerminalEscapesTheName() async throws {
        let radio = FakeRadio([Self.device()])
        defer { radio.close() }
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: bonds, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: bonds) }
        let command = [BLETool.executable.path, "-d", try radio.fake.servePseudoTerminal(), "scan", "--duration", "2"]
            .map { "'\($0)'" }.joined(separator: " ")
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment["COLUMNS"] = "200"
        environment["BLE_BOND_DIR"] = bonds.path
        environment.removeValue(forKey: "BLE_DEVICE")
        let run = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                                           environment: environment, killAfter: .seconds(60))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\u{1B}[2J\u{1B}[H"), "the table was not drawn: \(run.stdout.debugDescription)")
        // The NAME column is 20 wide: the escaped name is cut there (with ~).
        #expect(run.stdout.contains(#"F0:5E:B1:00:00:0E/random \x1b[2J\x1b]0;x\x07~"#), "\(run.stdout.debugDescription)")
        #expect(!run.stdout.contains("\u{1B}]0;x"))
        #expect(!run.stdout.unicodeScalars.contains { $0 == "\u{07}" || $0 == "\u{9B}" })
    }
}
