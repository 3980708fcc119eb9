import Foundation
import Testing
import BLETestSupport
import BLECore

/// `read`, `connect` with bonds and `--security` against Bumble's Security Manager
/// (Fixtures/peers/scenarios/security.json): each command is a new process, so a bond made by
/// `ble pair` is used by the next command through the bond directory alone.
@Suite struct CLISecurityRadioTests {
    static let encrypted = "5EC00002-0000-1000-8000-00805F9B34FB"
    static let open = "5EC00003-0000-1000-8000-00805F9B34FB"

    @Test(.timeLimit(.minutes(2)))
    func readUsesTheBondThatPairMadeWithoutPairingAgain() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let pair = try await BLETool.run(d + ["pair", device])
            #expect(pair.status == 0, "\(pair.stderr)")
            let adapter = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first)
            let file = dir.appendingPathComponent(adapter).appendingPathComponent("\(device)-random")
            let bond = try Data(contentsOf: file)

            let read = try await BLETool.run(d + ["read", device, "-c", Self.encrypted, "--raw"])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == "encrypted")
            // Encrypted with the stored key: a new pairing would have replaced the bond file.
            #expect(try Data(contentsOf: file) == bond)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func securityOptionPairsBeforeTheFirstRequestWhenThereIsNoBond() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            // The open characteristic needs nothing: only --security makes this side pair.
            let read = try await BLETool.run(d + ["read", device, "-c", Self.open, "--raw", "--security", "encrypted"])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == "open")
            let bonds = try await BLETool.run(d + ["bonds"])
            #expect(bonds.stdoutLines.first?.hasPrefix("\(device)/random") == true, "\(bonds.stdout)")
            // The bond is Just Works and so is the peer: no authenticated key to be had, one line says why.
            let authenticated = try await BLETool.run(["-d", radio.transportSpec, "--bond-dir", dir.path, "read", device, "-c", Self.open, "--security", "authenticated"])
            #expect(authenticated.status == 1)
            #expect(authenticated.stderrLines.last?.hasPrefix("ble: ") == true, "\(authenticated.stderr)")
            #expect(authenticated.stderrLines.last?.contains(device) == true, "\(authenticated.stderr)")
        }
    }

    @Test func securityOptionTakesEncryptedOrAuthenticated() async throws {
        let run = try await BLETool.run(["-d", "tcp:127.0.0.1:9", "read", "F0:5E:C0:00:00:01", "-c", "2A19", "--security", "high"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--security needs encrypted or authenticated, not \"high\""))
    }

    @Test(.timeLimit(.minutes(2)))
    func aForgottenBondIsOneLineThatSaysHowToPairAgain() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("forgetful")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            #expect(try await BLETool.run(d + ["pair", device]).status == 0)
            // The peer forgot the bond when that link ended.
            let read = try await BLETool.run(d + ["read", device, "-c", Self.encrypted, "--raw"])
            #expect(read.status == 1)
            #expect(read.stderrLines.last == "ble: \(device) no longer has the bond (encryption with the stored key failed with PIN or Key Missing, 0x06): pair again to replace it ('ble pair \(device)', or Connection.pair(store:))", "\(read.stderr)")
            let again = try await BLETool.run(d + ["pair", device])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout == "encrypted, Secure Connections, bonded\n")
        }
    }
}

extension CLISecurityRadioTests {
    /// A bonded device that advertises with a resolvable private address is reached by its
    /// identity address: `read` scans, resolves the address with the bond's IRK and encrypts.
    @Test(.timeLimit(.minutes(2)))
    func readReachesABondedPrivateDeviceByItsIdentityAddress() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let identity = try #require(radio.device("private")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let pair = try await BLETool.run(d + ["pair", "SC private sim"])
            #expect(pair.status == 0, "\(pair.stderr)")
            let bonds = try await BLETool.run(d + ["bonds"])
            #expect(bonds.stdoutLines.first?.contains("identity \(identity)/random") == true, "\(bonds.stdout)")

            let read = try await BLETool.run(d + ["read", identity, "-c", Self.encrypted, "--raw"])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == "encrypted")
            #expect(read.stderrLines.contains { $0.hasPrefix("\(identity) advertises as ") && $0.hasSuffix("(resolved with its IRK)") }, "\(read.stderr)")
        }
    }
}

extension CLISecurityRadioTests {
    /// `connect` encrypts with the bond at once and shows it in the link's events.
    @Test(.timeLimit(.minutes(2)))
    func connectEncryptsWithTheBond() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            #expect(try await BLETool.run(d + ["pair", device]).status == 0)
            let run = try await BLETool.interrupt(d + ["connect", device]) { $0.contains("security: encrypted") }
            #expect(run.status == 130)
            #expect(run.stdout.contains("connected (handle"))
            #expect(run.stderr.contains("connected to \(device) (random static) (encrypted); Ctrl-C to disconnect"), "\(run.stderr)")
        }
    }
}
