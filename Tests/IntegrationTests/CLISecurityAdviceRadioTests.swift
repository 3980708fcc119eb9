import Foundation
import Testing
import BLETestSupport

/// A request the device still refuses for lack of security once this run did what it could
/// (stdin is not a terminal here, so the pairing on the spot is Just Works) ends in one line
/// that names the refusal (Vol 3, Part F, 3.4.1.1) and says what to run.
@Suite struct CLISecurityAdviceRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func insufficientAuthenticationSaysToPairWithMITM() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("display")
            let run = try await peer.run(["read", device, "-c", CLISecurityPeer.authenticated])
            #expect(run.status == 1)
            let line = try #require(run.stderrLines.last)
            #expect(run.stderrLines.filter { $0.hasPrefix("ble: ") }.count == 1, "\(run.stderr)")
            #expect(line.hasPrefix("ble: \(device) refused reading 5EC00006"), "\(line)")
            #expect(line.hasSuffix(": Insufficient Authentication (0x05); it needs an authenticated link (a key made with a passkey or a number comparison, not Just Works): run 'ble pair \(device) --mitm' on a terminal first or pass --security authenticated"), "\(line)")
            // The pairing on the spot was Just Works: that is all a run without a person can do.
            #expect(try await peer.log("display").first == "pairing request 01 03 00 09 10 00 07: JUST_WORKS")
        }
    }

    /// A device that answers Encryption Key Size Too Short (5EC00012) or Insufficient
    /// Encryption (5EC00013) even on the link encrypted for it: no stronger key would help,
    /// so the line says what would.
    @Test(.timeLimit(.minutes(1)), arguments: [
        ("5EC00012", "Encryption Key Size Too Short (0x0C); it needs a longer encryption key than this link's: run 'ble pair DEVICE' again for a 16-octet key"),
        ("5EC00013", "Insufficient Encryption (0x0F); it needs an encrypted link: run 'ble pair DEVICE' first or pass --security encrypted"),
    ])
    func encryptionRefusalsSayToPair(characteristic: String, advice: String) async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("jw")
            let run = try await peer.run(["read", device, "-c", characteristic + "-0000-1000-8000-00805F9B34FB"])
            #expect(run.status == 1)
            let line = try #require(run.stderrLines.last)
            #expect(line.hasPrefix("ble: \(device) refused reading \(characteristic)"), "\(line)")
            #expect(line.hasSuffix(": " + advice.replacingOccurrences(of: "DEVICE", with: device)), "\(line)")
        }
    }
}
