import BLETestSupport
import Foundation
import Testing

/// A device whose advertised name and characteristic values carry terminal escape sequences
/// (ESC [2J clears the screen, ESC ] 0;... BEL retitles the window, the C1 CSI U+009B) must not
/// act on the terminal of whoever runs `ble`: text output shows them escaped, JSON keeps the
/// exact text. The device is a Bumble peer on the virtual radio, from a scenario written here.
@Suite(.serialized) struct CLIEscapeTests {
    static let name = "\u{1B}[2J\u{1B}]0;x\u{07}\u{9B}z"
    static let escaped = #"\x1b[2J\x1b]0;x\x07\u{9b}z"#
    static let address = "F0:5E:B1:00:00:0E"

    static func scenario() throws -> String {
        let device: [String: Any] = [
            "id": "evil", "name": name, "address": address,
            "advertising": ["intervalMs": 50],
            "services": [[
                "uuid": "FFF0",
                "characteristics": [[
                    "uuid": "FFF1", "properties": ["read"], "permissions": ["read"], "value": ["utf8": "ok\u{9B}31mred"],
                ]],
            ]],
        ]
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("escape-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: ["devices": [device]]).write(to: url)
        return url.path
    }

    static func hasControls(_ s: String) -> Bool {
        s.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
    }

    @Test func scanLinesEscapeTheNameAndJSONKeepsIt() async throws {
        try await VirtualRadio.with(scenario: try Self.scenario()) { radio in
            let run = try await BLETool.run(["-d", radio.transportSpec, "scan", "--duration", "2"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!Self.hasControls(run.stdout), "\(run.stdout.debugDescription)")
            #expect(run.stdoutLines.first?.contains("\(Self.address)/random") == true)
            #expect(run.stdoutLines.contains { $0.contains("\"\(Self.escaped)\"") }, "\(run.stdout)")

            let json = try await BLETool.run(["-d", radio.transportSpec, "scan", "--json", "--duration", "2"])
            let names = try BLETool.jsonLines(json).compactMap { $0["name"] as? String }
            #expect(names.contains(Self.name))
        }
    }

    @Test func inspectAndReadEscapeValues() async throws {
        try await VirtualRadio.with(scenario: try Self.scenario()) { radio in
            let inspect = try await BLETool.run(["-d", radio.transportSpec, "inspect", Self.address, "--read"])
            #expect(inspect.status == 0, "\(inspect.stderr)")
            #expect(!Self.hasControls(inspect.stdout), "\(inspect.stdout.debugDescription)")
            // Values with C0 controls are not shown as text at all (hex only); C1 ones are escaped.
            #expect(inspect.stdout.contains(#""ok\u{9b}31mred""#), "\(inspect.stdout)")

            let read = try await BLETool.run(["-d", radio.transportSpec, "read", Self.address, "-c", "FFF1"])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout.contains(#""ok\u{9b}31mred""#), "\(read.stdout)")
            #expect(!Self.hasControls(read.stdout))
            let json = try await BLETool.run(["-d", radio.transportSpec, "read", Self.address, "-c", "FFF1", "--json"])
            #expect(try BLETool.jsonLines(json).first?["utf8"] as? String == "ok\u{9B}31mred")
        }
    }
}
