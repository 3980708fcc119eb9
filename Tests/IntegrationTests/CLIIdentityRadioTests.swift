import Foundation
import Testing
import BLETestSupport
import BLECore
import BLEWire

/// A bonded device that advertises with a resolvable private address (Vol 6, Part B, 1.3.2.2;
/// Bumble's "private" peer in Fixtures/peers/scenarios/security.json, IRK of Vol 3, Part H,
/// D.7) keeps its identity address in the CLI: `scan` shows it next to the private address
/// (lines and JSON), and `connect IDENTITY` finds the device under its private address.
@Suite struct CLIIdentityRadioTests {
    /// Pairs with the private device by name; returns its identity address.
    static func pair(_ radio: VirtualRadio, _ d: [String]) async throws -> String {
        let identity = try #require(radio.device("private")).address
        let pair = try await BLETool.run(d + ["pair", "SC private sim"])
        #expect(pair.status == 0, "\(pair.stderr)")
        return identity
    }

    @Test(.timeLimit(.minutes(2)))
    func scanShowsTheIdentityOfABondedPrivateDevice() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let unbonded = try await BLETool.interrupt(d + ["scan", "--name", "SC private sim"]) { $0.contains("\n") }
            let first = try #require(unbonded.stdoutLines.first)
            #expect(first.hasPrefix("discovered ") && !first.contains(" = "), "resolved before there was a bond: \(first)")

            let identity = try await Self.pair(radio, d)
            let capture = FileManager.default.temporaryDirectory.appendingPathComponent("identity-\(UUID().uuidString).btsnoop")
            defer { try? FileManager.default.removeItem(at: capture) }
            let lines = try await BLETool.interrupt(d + ["--btsnoop", capture.path, "scan", "--name", "SC private sim"]) { $0.contains("\n") }
            let line = try #require(lines.stdoutLines.first)
            // "discovered 5x:xx:xx:xx:xx:xx/random = F0:5E:C0:00:00:07/random  -50 dBm  ..."
            let words = line.split(separator: " ").map(String.init)
            #expect(words.count > 3 && words[0] == "discovered" && words[2] == "=" && words[3] == "\(identity)/random", "\(line)")
            let rpa = try #require(words.count > 1 ? words[1].split(separator: "/").first.map(String.init) : nil)
            #expect(rpa != identity)
            // A resolvable private address: its two most significant bits are 0b01.
            #expect(rpa.first.map { "4567".contains($0) } == true, "\(rpa) is not a resolvable private address")

            // Bumble's controller has LL Privacy: the bond's IRK went into its resolving list.
            // LE Add Device To Resolving List (Vol 4, Part E, 7.8.38): identity address type
            // 0x01 (random), the address and Peer_IRK least significant octet first (the IRK is
            // the sample of Vol 3, Part H, D.7), Local_IRK zero; then LE Set Address Resolution
            // Enable (7.8.44) with 0x01.
            let commands = try BTSnoopReader(bytes: Array(Data(contentsOf: capture))).records.compactMap { r -> HCICommandPacket? in
                if case .command(let c) = r.packet { return c } else { return nil }
            }
            let irk: [UInt8] = [0xec, 0x02, 0x34, 0xa3, 0x57, 0xc8, 0xad, 0x05, 0x34, 0x10, 0x10, 0xa6, 0x0a, 0x39, 0x7d, 0x9b]
            let add = try #require(commands.first { $0.opcode.rawValue == 0x2027 })
            #expect(add.parameters == [0x01, 0x07, 0x00, 0x00, 0xC0, 0x5E, 0xF0] + irk.reversed() + [UInt8](repeating: 0, count: 16))
            #expect(commands.contains { $0.opcode.rawValue == 0x202D && $0.parameters == [0x01] })

            let json = try await BLETool.interrupt(d + ["scan", "--name", "SC private sim", "--json"]) { $0.contains("\n") }
            let object = try #require(try BLETool.jsonLines(json).first)
            #expect(object["identityAddress"] as? String == identity)
            #expect(object["identityAddressType"] as? String == "random")
            #expect((object["address"] as? String).map { $0 != identity } == true)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func connectByIdentityFindsTheDeviceUnderItsPrivateAddress() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let identity = try await Self.pair(radio, d)
            let run = try await BLETool.interrupt(d + ["connect", identity]) { $0.contains("security: encrypted") }
            #expect(run.status == 130)
            #expect(run.stderrLines.contains { $0.hasPrefix("\(identity) advertises as ") && $0.hasSuffix("(resolved with its IRK)") }, "\(run.stderr)")
            #expect(run.stdout.contains("connected (handle"), "\(run.stdout)")
        }
    }

    /// Pairing again by the identity address (to replace the bond) finds the device too.
    @Test(.timeLimit(.minutes(2)))
    func pairAgainByIdentityFindsTheDeviceUnderItsPrivateAddress() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let identity = try await Self.pair(radio, d)
            let again = try await BLETool.run(d + ["pair", identity])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stderrLines.contains { $0.hasPrefix("\(identity) advertises as ") }, "\(again.stderr)")
        }
    }
}
