import BLETestSupport
import Foundation
import Testing

/// The `ble` executable against the Bumble virtual radio (Fixtures/peers/scenarios), for what
/// needs an independent peer: a GATT server that is not ours, and a device that makes the
/// tool pair. Each test starts a radio and runs the tool with `-d tcp:127.0.0.1:PORT`; the
/// rest of the tool's device commands run against fakes (`CLIFakeRadioTests`).
@Suite(.serialized) struct CLIRadioTests {
    /// "2901" and the 128-bit form of SIG UUIDs compare equal.
    static func normalized(_ uuid: String) -> String {
        let u = uuid.uppercased()
        if u.count == 4 { return "0000\(u)-0000-1000-8000-00805F9B34FB" }
        if u.count == 8 { return "\(u)-0000-1000-8000-00805F9B34FB" }
        return u
    }

    /// Log lines at warning level ("ble[warning]: ...") on stderr. Bumble's controller never
    /// answers LE Set PHY, an optional command the connect sends: that must not show up in
    /// the middle of a command's output at the default log level.
    static func warnings(_ run: BLETool.Run) -> [String] {
        run.stderrLines.filter { $0.contains("[warning]") || $0.hasPrefix("warning") }
    }

    @Test func inspectJSONMatchesTheLabScenario() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab"))
            let run = try await BLETool.run(["-d", radio.transportSpec, "inspect", lab.address, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(Self.warnings(run).isEmpty, "\(run.stderr)")
            let tree = try #require(try BLETool.jsonLines(run).first)
            let services = try #require(tree["services"] as? [[String: Any]])

            let scenarioData = try Data(contentsOf: BLETool.fixture("peers/scenarios/lab.json"))
            let scenario = try #require(try JSONSerialization.jsonObject(with: scenarioData) as? [String: Any])
            let device = try #require((scenario["devices"] as? [[String: Any]])?.first)
            let expected = try #require(device["services"] as? [[String: Any]])
            for es in expected {
                let uuid = Self.normalized(es["uuid"] as? String ?? "")
                let got = try #require(services.first { Self.normalized($0["uuid"] as? String ?? "") == uuid }, "service \(uuid)")
                let gotChars = try #require(got["characteristics"] as? [[String: Any]])
                let wantChars = try #require(es["characteristics"] as? [[String: Any]])
                #expect(gotChars.count == wantChars.count)
                for (g, w) in zip(gotChars, wantChars) {
                    #expect(Self.normalized(g["uuid"] as? String ?? "") == Self.normalized(w["uuid"] as? String ?? ""))
                    #expect(Set(g["properties"] as? [String] ?? []) == Set(w["properties"] as? [String] ?? []), "\(w["uuid"] ?? "")")
                    let gotDescriptors = Set((g["descriptors"] as? [[String: Any]] ?? []).compactMap { ($0["uuid"] as? String).map(Self.normalized) })
                    for d in w["descriptors"] as? [[String: Any]] ?? [] {
                        #expect(gotDescriptors.contains(Self.normalized(d["uuid"] as? String ?? "")))
                    }
                }
            }
        }
    }

    /// A plain read on a link to Bumble: the value on stdout, no warning on stderr.
    @Test func readPrintsTheValueWithoutWarnings() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab")).address
            // 6E400006 holds 00000000 (scenario lab.json).
            let run = try await BLETool.run(["-d", radio.transportSpec, "read", lab, "-c", "6E400006-B5A3-F393-E0A9-E50E24DCCA9E"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("0x00000000 (4 bytes"), "\(run.stdout)")
            #expect(Self.warnings(run).isEmpty, "\(run.stderr)")
        }
    }

    @Test func readThatNeedsEncryptionPairsOnTheSpot() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab")).address
            // 6E400005 needs an encrypted link (scenario lab.json: permissions readEncrypted):
            // the device refuses the read, the tool pairs on the spot (Just Works), keeps the
            // bond in the bond directory and reads again.
            let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: bonds) }
            let encrypted = try await BLETool.run(["-d", radio.transportSpec, "--bond-dir", bonds.path, "read", lab, "-c", "6E400005-B5A3-F393-E0A9-E50E24DCCA9E", "--raw"])
            #expect(encrypted.status == 0, "\(encrypted.stderr)")
            #expect(encrypted.stdout == "secret")
            let stored = FileManager.default.enumerator(atPath: bonds.path)?.compactMap { $0 as? String } ?? []
            #expect(stored.contains { $0.hasSuffix("\(lab)-random") }, "\(stored)")
        }
    }
}
