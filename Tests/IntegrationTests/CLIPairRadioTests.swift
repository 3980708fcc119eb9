import Foundation
import Testing
import BLETestSupport

/// `ble pair` and `ble bonds` against Bumble's Security Manager
/// (Fixtures/peers/scenarios/security.json), with bonds in a fresh --bond-dir.
@Suite struct CLIPairRadioTests {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test(.timeLimit(.minutes(2)))
    func pairWithPasskeyPrintsTheLevelAndKeepsTheBond() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("passkey")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let run = try await BLETool.run(d + ["pair", device, "--io", "keyboard-only", "--passkey", "123456"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")

            let bonds = try await BLETool.run(d + ["bonds"])
            #expect(bonds.status == 0)
            let line = try #require(bonds.stdoutLines.first)
            #expect(line.hasPrefix("\(device)/random  identity \(device)/random  LTK IRK"))
            #expect(line.contains("encrypted, authenticated, Secure Connections"))
            // One file per adapter and peer, readable by its owner only.
            let adapter = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first)
            let file = dir.appendingPathComponent(adapter).appendingPathComponent("\(device)-random").path
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

            let removed = try await BLETool.run(d + ["bonds", "--remove", device])
            #expect(removed.status == 0)
            #expect(try await BLETool.run(d + ["bonds"]).stdout.isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func wrongPasskeyIsOneLineWithTheReason() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("passkey")).address
            let run = try await BLETool.run(["-d", radio.transportSpec, "--bond-dir", dir.path, "pair", device, "--io", "keyboard-only", "--passkey", "654321"])
            #expect(run.status == 1)
            // One failure line, the last. The link set-up prints no warning: Bumble's controller
            // never answers LE Set PHY, and that is logged at debug level only.
            #expect(run.stderrLines.filter { $0.hasPrefix("ble: ") }.count == 1, "\(run.stderr)")
            #expect(run.stderrLines.last?.hasPrefix("ble: Confirm Value Failed (0x04) pairing with \(device)") == true)
        }
    }
}
