import Foundation
import Testing
import BLETestSupport

/// `ble pair --sign-key` and `ble write --signed` against Bumble's "signer" peer
/// (Fixtures/peers/scenarios/security-extras.json, signedWrites), which checks each Signed Write
/// Command's MAC (Vol 3, Part H, 2.4.5) with the CSRK the central gave it and drops any that
/// fails or repeats a SignCounter. Each command is a new process: the key and its counter
/// live in the bond directory.
@Suite struct CLISignedWriteRadioTests {
    static let signed = "5EC00004-0000-1000-8000-00805F9B34FB"
    static let open = "5EC00003-0000-1000-8000-00805F9B34FB"

    @Test(.timeLimit(.minutes(2)))
    func writeSignedWithTheKeyThatPairGaveIsAcceptedByThePeer() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("signer")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let pair = try await BLETool.run(d + ["pair", device, "--sign-key"])
            #expect(pair.status == 0, "\(pair.stderr)")
            #expect(pair.stdout == "encrypted, Secure Connections, bonded, signing key given\n")
            #expect(try await BLETool.run(d + ["bonds"]).stdout.contains("local-CSRK#0"))

            for (n, text) in ["signed 1", "signed 2"].enumerated() {
                let write = try await BLETool.run(d + ["write", device, "-c", Self.signed, "--string", text, "--signed"])
                #expect(write.status == 0, "\(write.stderr)")
                // The peer keeps the value only when the MAC checks out with the next counter.
                let read = try await BLETool.run(d + ["read", device, "-c", Self.signed, "--raw"])
                #expect(read.status == 0, "\(read.stderr)")
                #expect(read.stdout == text)
                #expect(try await BLETool.run(d + ["bonds"]).stdout.contains("local-CSRK#\(n + 1)"))
            }

            // A characteristic without Authenticated Signed Writes is refused before signing.
            let refused = try await BLETool.run(d + ["write", device, "-c", Self.open, "--hex", "01", "--signed"])
            #expect(refused.status == 1)
            #expect(refused.stderrLines.last?.hasPrefix("ble: ") == true, "\(refused.stderr)")
            #expect(try await BLETool.run(d + ["bonds"]).stdout.contains("local-CSRK#2"))
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func writeSignedWithoutASigningKeyIsOneLineSayingHowToGetOne() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("signer")).address
            let d = ["-d", radio.transportSpec, "--bond-dir", dir.path]
            let expected = "ble: no signing key (CSRK) of this side for \(device): pair with 'ble pair \(device) --sign-key' to distribute one, then write with --signed"
            // No bond at all, then a bond made without the key: the same line, no write sent.
            let none = try await BLETool.run(d + ["write", device, "-c", Self.signed, "--string", "x", "--signed"])
            #expect(none.status == 1)
            #expect(none.stderrLines.last == expected, "\(none.stderr)")
            let pair = try await BLETool.run(d + ["pair", device])
            #expect(pair.status == 0, "\(pair.stderr)")
            let keyless = try await BLETool.run(d + ["write", device, "-c", Self.signed, "--string", "x", "--signed"])
            #expect(keyless.status == 1)
            #expect(keyless.stderrLines.last == expected, "\(keyless.stderr)")
            let read = try await BLETool.run(d + ["read", device, "-c", Self.signed, "--raw"])
            #expect(read.stdout == "unsigned", "\(read.stderr)")
        }
    }

    @Test func signedAndExpectReplyOnAreRefusedTogether() async throws {
        let run = try await BLETool.run(["-d", "tcp:127.0.0.1:9", "write", "F0:5E:C0:00:00:09", "-c", Self.signed, "--hex", "01", "--signed", "--expect-reply-on", Self.open])
        #expect(run.status == 2)
        #expect(run.stderr.contains("give --signed or --expect-reply-on, not both"))
    }

    @Test func signKeyAndNoBondAreRefusedTogether() async throws {
        let run = try await BLETool.run(["-d", "tcp:127.0.0.1:9", "pair", "F0:5E:C0:00:00:09", "--sign-key", "--no-bond"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("give --sign-key or --no-bond, not both"))
    }
}
