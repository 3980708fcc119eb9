import Foundation
import Testing
import BLETestSupport

/// Bonds used by later processes against Bumble peers (security-cli.json): `read`, `write`,
/// `inspect` and `connect` each encrypt with the stored key, and the peer's security log
/// shows encryption with a stored key and no Pairing Request after the first.
@Suite struct CLIBondReuseRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func inspectAndWriteReEncryptWithTheBondWithoutPairing() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("jw")
            #expect(try await peer.run(["pair", device]).status == 0)
            let inspect = try await peer.run(["inspect", device, "--read"])
            #expect(inspect.status == 0, "\(inspect.stderr)")
            #expect(inspect.stdout.contains("\"encrypted\""), "\(inspect.stdout)")
            let write = try await peer.run(["write", device, "-c", CLISecurityPeer.writable, "--string", "sealed"])
            #expect(write.status == 0, "\(write.stderr)")
            // inspect --read also met 5EC00012 and 5EC00013, refused with 0x0C and 0x0F on the
            // encrypted link: no pairing was started for them (a stronger key would not help).
            let log = try await peer.log("jw")
            #expect(log == [
                "pairing request 01 03 00 09 10 00 07: JUST_WORKS", "encrypted by pairing", "paired: Secure Connections, bonded",
                "encrypted with a stored key", "encrypted with a stored key", "encrypted with a stored key",
            ], "\(log)")
        }
    }

    /// `read` then `connect`; the peer's log is read before `connect`, which comes last: a
    /// Ctrl-C right as the link is set up can leave the link up at Bumble's controller (the
    /// HCI Disconnect of the close waits behind LE Set PHY, which Bumble never answers, and
    /// its one-second bound can run out first), and that would hide the device from a later
    /// command. `connect` shows the encryption itself, and the bond file it would have
    /// replaced by pairing is unchanged.
    @Test(.timeLimit(.minutes(1)))
    func readAndConnectReEncryptWithTheBondWithoutPairing() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("jw")
            #expect(try await peer.run(["pair", device]).status == 0)
            let file = try #require(try peer.bondFiles().first)
            let bond = try Data(contentsOf: peer.directory.appendingPathComponent(file))
            let read = try await peer.run(["read", device, "-c", CLISecurityPeer.encrypted, "--raw"])
            #expect(read.stdout == "encrypted", "\(read.stderr)")
            let log = try await peer.log("jw")
            #expect(log == [
                "pairing request 01 03 00 09 10 00 07: JUST_WORKS", "encrypted by pairing", "paired: Secure Connections, bonded",
                "encrypted with a stored key", "encrypted with a stored key",
            ], "\(log)")
            let connect = try await BLETool.interrupt(peer.d + ["connect", device]) { $0.contains("security: encrypted") }
            #expect(connect.status == 130, "\(connect.stderr)")
            #expect(connect.stderr.contains("connected to \(device) (random static) (encrypted); Ctrl-C to disconnect"), "\(connect.stderr)")
            #expect(try Data(contentsOf: peer.directory.appendingPathComponent(file)) == bond)
        }
    }

    /// A legacy bond re-encrypts with the EDIV and Rand the peer gave with its LTK (the peer
    /// answers only a request that carries them).
    @Test(.timeLimit(.minutes(1)))
    func aLegacyBondReEncryptsWithItsEDIVAndRand() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("legacy")
            let pair = try await peer.run(["pair", device])
            #expect(pair.stdout == "encrypted, legacy, bonded\n", "\(pair.stderr)")
            try await peer.expectRead("legacy", CLISecurityPeer.encrypted, "encrypted")
            #expect(try await peer.log("legacy") == [
                "pairing request 01 03 00 09 10 00 07: JUST_WORKS", "encrypted by pairing", "paired: legacy, bonded",
                "encrypted with a stored key", "encrypted with a stored key",
            ])
        }
    }

    /// `--security authenticated` pairs with MITM protection first when no bond gives it.
    @Test(.timeLimit(.minutes(1)))
    func securityAuthenticatedPairsWithMITMBeforeTheFirstRequest() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("yesno")
            let session = try TerminalSession(peer.d + ["read", device, "-c", CLISecurityPeer.authenticated, "--raw", "--security", "authenticated"], stdin: .pipe)
            _ = await session.stderr(until: "? [y/N] ")
            session.type(Array("y\n".utf8))
            session.closeInput()
            let run = await session.finish()
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "authenticated")
            // Keyboard Display (0x04) with MITM: Numeric Comparison, before any request was refused.
            #expect(try await peer.log("yesno") == [
                "pairing request 01 04 00 0d 10 00 07: NUMERIC_COMPARISON", "encrypted by pairing", "paired: Secure Connections, bonded",
                "encrypted with a stored key",
            ])
        }
    }

    /// `--bond-dir` wins over $BLE_BOND_DIR; each names its own store.
    @Test(.timeLimit(.minutes(1)))
    func bondDirOptionOverridesTheEnvironment() async throws {
        try await CLISecurityPeer.with { peer in
            let device = try peer.address("jw")
            let other = try CLIPairRadioTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: other) }
            let env = ["BLE_BOND_DIR": other.path]
            let pair = try await BLETool.run(["-d", peer.radio.transportSpec, "pair", device], environment: env)
            #expect(pair.status == 0, "\(pair.stderr)")
            #expect(try await BLETool.run(["-d", peer.radio.transportSpec, "bonds"], environment: env).stdoutLines.first?.hasPrefix("\(device)/random") == true)
            #expect(try await BLETool.run(peer.d + ["bonds"], environment: env).stdout.isEmpty)
        }
    }
}

/// `ble bonds --import-bluez DIR` with Fixtures/bluez (BlueZ's info files, among them the radio's
/// adapter 00:00:5E:00:53:01, holding the same keys as the peers' "storedBond"): the imported
/// bonds encrypt the next link without pairing.
@Suite struct CLIBlueZImportRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func importedBondsEncryptWithoutPairing() async throws {
        try await CLISecurityPeer.with { peer in
            let fixtures = BLETool.fixture("bluez").path
            let imported = try await peer.run(["bonds", "--import-bluez", fixtures])
            #expect(imported.status == 0, "\(imported.stderr)")
            // Every adapter directory is imported; the radio's adapter is 00:00:5E:00:53:01.
            #expect(imported.stdout == "imported 2 bonds from \(fixtures)/00:00:5E:00:53:01\nimported 2 bonds from \(fixtures)/00:1B:DC:0F:00:01\n")
            let sc = try peer.address("imported-sc"), legacy = try peer.address("imported-legacy")
            let bonds = try await peer.run(["bonds"])
            let radios = bonds.stdoutLines.filter { $0.hasSuffix("  adapter 00:00:5E:00:53:01") }
            #expect(bonds.stdoutLines.count == 4 && radios.count == 2, "\(bonds.stdout)")
            #expect(radios.first?.hasPrefix("\(sc)/random  identity \(sc)/random  LTK  encrypted, Secure Connections  since ") == true, "\(bonds.stdout)")
            #expect(radios.last?.hasPrefix("\(legacy)/random  identity \(legacy)/random  LTK  encrypted, legacy  since ") == true, "\(bonds.stdout)")
            // When made: the time BlueZ wrote the info file, as a date.
            #expect(bonds.stdoutLines.allSatisfy { $0.wholeMatch(of: /.*  since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  adapter .*/) != nil }, "\(bonds.stdout)")
            for id in ["imported-sc", "imported-legacy"] {
                try await peer.expectRead(id, CLISecurityPeer.encrypted, "encrypted")
                #expect(try await peer.log(id) == ["encrypted with a stored key", "encrypted with a stored key"])
            }
            let removed = try await peer.run(["bonds", "--remove", legacy])
            #expect(removed.stdout == "removed the bond with \(legacy)\n")
            #expect(try await peer.run(["bonds"]).stdoutLines.count == 3)
            #expect(try peer.bondFiles().filter { $0.hasPrefix("00:00:5E:00:53:01/") } == ["00:00:5E:00:53:01/\(sc)-random"])
        }
    }
}
