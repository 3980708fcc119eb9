import Foundation
import Testing
import BLETestSupport

/// `ble pair` options run end to end against Bumble peers (security-cli.json), each checked by
/// what the peer saw: the Pairing Request that arrived (Vol 3, Part H, 3.5.1: code 0x01, IO
/// Capability, OOB flag, AuthReq with Bonding_Flags 0x01, MITM 0x04, SC 0x08, Keypress 0x10,
/// Maximum Encryption Key Size, Initiator and Responder Key Distribution with EncKey 0x01,
/// IdKey 0x02, SignKey 0x04) and the association model the peer chose from it (2.3.5.1).
/// stdin is not a terminal here, so without --io the tool offers NoInputNoOutput (0x03).
@Suite struct CLIPairOptionsRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func legacyOffersOnlyLegacyPairing() async throws {
        try await CLISecurityPeer.with { peer in
            let run = try await peer.run(["pair", try peer.address("jw"), "--legacy"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, legacy, bonded\n")
            // AuthReq 0x01: bonding, no SC bit; the SC-capable peer falls back to legacy.
            #expect(try await peer.log("jw") == [
                "pairing request 01 03 00 01 10 00 07: JUST_WORKS", "encrypted by pairing", "paired: legacy, bonded",
                "encrypted with a stored key",
            ])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func secureConnectionsOnlyRefusesALegacyPeerInOneLine() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("legacy")
            let run = try await peer.run(["pair", device, "--sc-only"])
            #expect(run.status == 1)
            #expect(run.stdout.isEmpty)
            #expect(run.stderrLines.count == 1, "\(run.stderr)")
            #expect(run.stderrLines.first?.hasPrefix("ble: Authentication Requirements (0x03) pairing with \(device)") == true, "\(run.stderr)")
            #expect(try peer.bondFiles().isEmpty)
            // SC-only asks for MITM too (AuthReq 0x0D); the peer answered, then got Pairing
            // Failed with Authentication Requirements from this side.
            #expect(try await peer.log("legacy") == ["pairing request 01 03 00 0d 10 00 07: JUST_WORKS", "pairing failed 0x03"])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func noBondWritesNoBondFile() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("jw")
            let run = try await peer.run(["pair", device, "--no-bond"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, Secure Connections\n")
            #expect(try peer.bondFiles().isEmpty)
            #expect(try await peer.run(["bonds"]).stdout.isEmpty)
            // No Bonding flag and no keys asked for (3.6.1).
            #expect(try await peer.log("jw") == ["pairing request 01 03 00 08 10 00 00: JUST_WORKS", "encrypted by pairing", "paired: Secure Connections, not bonded"])
        }
    }

    /// Display Only here and there: Just Works (Table 2.8), though the peer asks for MITM.
    @Test(.timeLimit(.minutes(1)))
    func displayOnlyWithADisplayOnlyPeerIsJustWorks() async throws {
        try await CLISecurityPeer.with { peer in
            let run = try await peer.run(["pair", try peer.address("display"), "--io", "display-only"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, Secure Connections, bonded\n")
            #expect(try await peer.log("display").first == "pairing request 01 00 00 09 10 00 07: JUST_WORKS")
        }
    }

    /// Keyboard Only here, Display Only there: this side types what the peer shows.
    @Test(.timeLimit(.minutes(1)))
    func keyboardOnlyWithPasskeyTypesWhatThePeerShows() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("display")
            let run = try await peer.run(["pair", device, "--io", "keyboard-only", "--passkey", "123456"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")
            #expect(try await peer.log("display").first == "pairing request 01 02 00 09 10 00 07: PASSKEY")
            // A MITM-protected key: the characteristic that needs one reads in a new process.
            try await peer.expectRead("display", CLISecurityPeer.authenticated, "authenticated")
        }
    }

    /// No Input No Output: Just Works whatever the peer can do.
    @Test(.timeLimit(.minutes(1)))
    func noIOIsJustWorks() async throws {
        try await CLISecurityPeer.with { peer in
            let run = try await peer.run(["pair", try peer.address("yesno"), "--io", "no-io"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, Secure Connections, bonded\n")
            #expect(try await peer.log("yesno").first == "pairing request 01 03 00 09 10 00 07: JUST_WORKS")
        }
    }

    /// Display YesNo (and Keyboard Display) with a Display YesNo peer in Secure Connections:
    /// Numeric Comparison; the answer is read from stdin.
    @Test(.timeLimit(.minutes(1)), arguments: [("display-yesno", "01"), ("keyboard-display", "04")])
    func yesNoCapabilitiesCompareNumbers(io: String, code: String) async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("yesno")
            let session = try TerminalSession(peer.d + ["pair", device, "--io", io], stdin: .pipe)
            let prompt = await session.stderr(until: "? [y/N] ")
            session.type(Array("y\n".utf8))
            session.closeInput()
            let run = await session.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")
            #expect(prompt.contains("does \(device) show "), "\(prompt)")
            let log = try await peer.log("yesno")
            #expect(log.first == "pairing request 01 \(code) 00 09 10 00 07: NUMERIC_COMPARISON", "\(log)")
        }
    }

    /// Display Only here, Keyboard Only there: this side shows the passkey and the person
    /// types it on the peer (the test hands it to the peer through the radio's stdin).
    @Test(.timeLimit(.minutes(1)))
    func displayOnlyShowsThePasskeyThePeerTypes() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("keyboard")
            let session = try TerminalSession(peer.d + ["pair", device, "--io", "display-only"], stdin: .none)
            let shown = "type this passkey on \(device): "
            let text = await session.stderr { $0.contains(shown) && $0.split(separator: "\n").contains { $0.hasPrefix(shown) && $0.count == shown.count + 6 } }
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(shown) })
            let passkey = String(line.dropFirst(shown.count))
            #expect(passkey.count == 6 && passkey.allSatisfy(\.isNumber), "\(line)")
            peer.radio.send("passkey keyboard \(passkey)")
            let run = await session.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, Secure Connections, bonded\n")
            #expect(try await peer.log("keyboard").first == "pairing request 01 00 00 09 10 00 07: PASSKEY")
        }
    }

    /// Legacy Passkey Entry with a passkey of fewer than six digits (the peer shows 001234).
    @Test(.timeLimit(.minutes(1)))
    func legacyPasskeyEntryWithPasskeyOption() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("legacy-display")
            let run = try await peer.run(["pair", device, "--passkey", "1234"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, legacy, bonded\n")
            // --passkey alone means Keyboard Only (0x02).
            #expect(try await peer.log("legacy-display") == [
                "pairing request 01 02 00 09 10 00 07: PASSKEY", "encrypted by pairing", "paired: legacy, bonded",
                "encrypted with a stored key",
            ])
            try await peer.expectRead("legacy-display", CLISecurityPeer.authenticated, "authenticated")
        }
    }

    /// Without a bond, legacy pairing's level comes from the link: a passkey pairing is
    /// authenticated even though no key is kept.
    @Test(.timeLimit(.minutes(1)))
    func legacyPasskeyWithoutBondIsStillAuthenticated() async throws {
        try await CLISecurityPeer.with { peer in
            let run = try await peer.run(["pair", try peer.address("legacy-display"), "--passkey", "1234", "--no-bond"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "encrypted, authenticated, legacy\n")
            #expect(try peer.bondFiles().isEmpty)
        }
    }
}
