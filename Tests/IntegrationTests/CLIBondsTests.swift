import Foundation
import Testing

/// `ble bonds` works on the bond directory alone, with no radio: `-d` names a controller that
/// does not exist, and listing, removing and importing BlueZ's bonds (Fixtures/bluez, two
/// adapters) still work, every bond with its adapter.
@Suite struct CLIBondsTests {
    static let noController = ["-d", "unix:/nonexistent/ble-no-controller.sock"]

    @Test func importListAndRemoveWithoutAController() async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = Self.noController + ["--bond-dir", dir.path]
        let fixtures = BLETool.fixture("bluez").path
        let imported = try await BLETool.run(d + ["bonds", "--import-bluez", fixtures])
        #expect(imported.status == 0, "\(imported.stderr)")
        // The BR/EDR-only headset of 00:1B:DC:0F:00:01 holds no LE keys: left out.
        #expect(imported.stdout == "imported 2 bonds from \(fixtures)/00:00:5E:00:53:01\nimported 2 bonds from \(fixtures)/00:1B:DC:0F:00:01\n")
        #expect(imported.stderr.isEmpty, "\(imported.stderr)")

        let list = try await BLETool.run(d + ["bonds"])
        #expect(list.status == 0, "\(list.stderr)")
        let expected = [
            "F0:5E:C0:00:01:07/random  identity F0:5E:C0:00:01:07/random  LTK  encrypted, Secure Connections  since DATE  adapter 00:00:5E:00:53:01",
            "F0:5E:C0:00:01:08/random  identity F0:5E:C0:00:01:08/random  LTK  encrypted, legacy  since DATE  adapter 00:00:5E:00:53:01",
            "C4:5E:B1:00:00:01/random  identity C4:5E:B1:00:00:01/random  LTK IRK CSRK  encrypted, authenticated, Secure Connections  since DATE  adapter 00:1B:DC:0F:00:01",
            "F0:5E:B1:00:00:02/random  identity F0:5E:B1:00:00:02/random  LTK  encrypted, legacy  since DATE  adapter 00:1B:DC:0F:00:01",
        ]
        #expect(list.stdoutLines.map { $0.replacing(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/, with: "DATE") } == expected, "\(list.stdout)")

        let json = try BLETool.jsonLines(try await BLETool.run(d + ["--json", "bonds"]))
        #expect(json.map { "\($0["adapter"] ?? "") \($0["address"] ?? "") \($0["level"] ?? "")" } == [
            "00:00:5E:00:53:01 F0:5E:C0:00:01:07 encrypted, Secure Connections",
            "00:00:5E:00:53:01 F0:5E:C0:00:01:08 encrypted, legacy",
            "00:1B:DC:0F:00:01 C4:5E:B1:00:00:01 encrypted, authenticated, Secure Connections",
            "00:1B:DC:0F:00:01 F0:5E:B1:00:00:02 encrypted, legacy",
        ])

        let removed = try await BLETool.run(d + ["bonds", "--remove", "C4:5E:B1:00:00:01"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdout == "removed the bond with C4:5E:B1:00:00:01\n")
        #expect(try await BLETool.run(d + ["bonds"]).stdoutLines.count == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("00:1B:DC:0F:00:01").path) == ["F0:5E:B1:00:00:02-random"])
        let again = try await BLETool.run(d + ["bonds", "--remove", "C4:5E:B1:00:00:01"])
        #expect(again.status == 1)
        #expect(again.stderr == "ble: no bond with C4:5E:B1:00:00:01 in \(dir.path)\n")
    }

    /// A bond directory that does not exist yet lists nothing and is not created.
    @Test func listingAMissingBondDirectory() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        let run = try await BLETool.run(Self.noController + ["--bond-dir", dir.path, "bonds"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty && run.stderr.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.path))
    }

    @Test func importFromADirectoryThatIsNotThere() async throws {
        let run = try await BLETool.run(Self.noController + ["bonds", "--import-bluez", "/nonexistent/bluetooth"])
        #expect(run.status == 1)
        #expect(run.stderr == "ble: cannot list BlueZ's bond directory /nonexistent/bluetooth: No such file or directory (errno 2); name the directory that holds <adapter address>/<peer address>/info: ble bonds --import-bluez DIR\n")
    }

    /// Without DIR, BlueZ's /var/lib/bluetooth is read. It is root's only (mode 0700, or
    /// absent without bluez): run as nobody, the one line of the failure names it.
    @Test func importWithoutADirectoryReadsBlueZsOwn() async throws {
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        env["BLE_BOND_DIR"] = "/nonexistent/bonds"
        let ble = BLETool.executable.path
        let run = getuid() == 0
            ? try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=65534", "--regid=65534", "--clear-groups", ble, "bonds", "--import-bluez"],
                                       environment: env, killAfter: .seconds(30))
            : try await Subprocess.run(URL(fileURLWithPath: ble), ["bonds", "--import-bluez"], environment: env, killAfter: .seconds(30))
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        let permission = "ble: cannot list BlueZ's bond directory /var/lib/bluetooth: Permission denied (errno 13); bluetoothd keeps it readable by root only: run with sudo, or name a readable copy: ble bonds --import-bluez DIR\n"
        let absent = "ble: cannot list BlueZ's bond directory /var/lib/bluetooth: No such file or directory (errno 2); name the directory that holds <adapter address>/<peer address>/info: ble bonds --import-bluez DIR\n"
        #expect(run.stderr == (FileManager.default.fileExists(atPath: "/var/lib/bluetooth") ? permission : absent), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func importTakesOneDirectoryAndNotWithRemove() async throws {
        let two = try await BLETool.run(Self.noController + ["bonds", "--import-bluez", "/a", "/b"])
        #expect(two.status == 2)
        #expect(two.stderr == "ble: --import-bluez takes one DIR, not \"/b\" too; usage: ble bonds --import-bluez [DIR]\n")
        let both = try await BLETool.run(Self.noController + ["bonds", "--import-bluez", "--remove", "C4:5E:B1:00:00:01"])
        #expect(both.status == 2)
        #expect(both.stderr == "ble: --remove and --import-bluez each do one job; give one of them\n")
        let stray = try await BLETool.run(Self.noController + ["bonds", "/var/lib/bluetooth"])
        #expect(stray.status == 2)
    }
}
