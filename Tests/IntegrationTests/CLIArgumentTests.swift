import Foundation
import Testing

/// The `ble` tool's command line without a controller: usage errors, help, version and the
/// kernel without Bluetooth.
@Suite struct CLIArgumentTests {
    static let subcommands = ["adapters", "info", "scan", "connect", "inspect", "read", "write", "decode", "pair", "bonds", "l2cap", "gateway", "monitor", "adv", "advertise", "serve"]

    @Test(arguments: [
        ["scan", "--bogus"],                       // unknown long option
        ["scan", "-Q"],                            // unknown short option
        ["info", "-d"],                            // value missing at the end
        ["--device"],                              // global value missing
        ["frobnicate"],                            // unknown command
        [],                                        // no command
        ["read", "F0:5E:B1:00:00:01"],             // -c missing
        ["write", "F0:5E:B1:00:00:01", "-c", "2A19", "--hex", "01", "--string", "x"],
        ["write", "F0:5E:B1:00:00:01", "-c", "2A19", "--hex", "0g"],
        ["scan", "--timeout", "soon"],
        ["scan", "--min-rssi", "-300"],
        ["scan", "--service", "not-a-uuid"],
        ["scan", "--passive=yes"],                 // a flag given a value
        ["info", "extra"],                         // a stray argument
        ["connect", "F0:5E:B1:00:00:01/sideways"],
        ["read", "x", "-c", "2A37", "--notify", "--indicate"],
        ["scan", "--d", "x"],                      // ambiguous prefix: --device, --duplicates, --duration
    ])
    func usageErrorsExitTwoWithOneLine(_ arguments: [String]) async throws {
        let run = try await BLETool.run(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.hasPrefix("ble: "))
    }

    @Test func infoOnThisKernelReportsEAFNOSUPPORT() async throws {
        let run = try await BLETool.run(["info"])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderrLines.count == 1)
        // TransportError.bluetoothUnsupported's text, as the library words it.
        #expect(run.stderr.hasPrefix("ble: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT)"))
    }

    @Test func deviceComesFromTheEnvironmentAndEveryOptionForm() async throws {
        // An unparsable spec fails in the library's parser, naming the spec: exit 1.
        for args in [["info", "-d", "bogus:x"], ["info", "-dbogus:x"], ["info", "--device", "bogus:x"],
                     ["info", "--device=bogus:x"], ["-d", "bogus:x", "info"], ["--dev=bogus:x", "info"]] {
            let run = try await BLETool.run(args)
            #expect(run.status == 1, "\(args)")
            #expect(run.stderr.contains("invalid transport \"bogus:x\""), "\(args): \(run.stderr)")
        }
        let env = try await BLETool.run(["info"], environment: ["BLE_DEVICE": "bogus:y"])
        #expect(env.stderr.contains("\"bogus:y\""))
    }

    @Test func doubleDashEndsOptions() async throws {
        let run = try await BLETool.run(["decode", "--", "--json"])
        #expect(run.status == 1)
        #expect(run.stderr == "ble: cannot read --json: no such file; give the path of a btsnoop capture\n")
    }

    @Test(arguments: subcommands)
    func everySubcommandHasHelpWithExamples(_ name: String) async throws {
        for flag in ["--help", "-h"] {
            let run = try await BLETool.run([name, flag])
            #expect(run.status == 0)
            #expect(run.stdout.hasPrefix("ble \(name) - "))
            #expect(run.stdout.contains("Usage:\n  ble \(name)"))
            // monitor needs root: its examples start with sudo.
            #expect(run.stdout.contains("Examples:\n  $ ble \(name)") || run.stdout.contains("Examples:\n  $ sudo ble \(name)"))
            #expect(run.stdout.contains("-d, --device SPEC"))
        }
    }

    @Test func topLevelHelpAndVersion() async throws {
        let help = try await BLETool.run(["--help"])
        #expect(help.status == 0)
        for name in Self.subcommands { #expect(help.stdout.contains("\n  \(name) ")) }
        #expect(help.stdout.contains("Examples:"))
        let version = try await BLETool.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "ble 0.2.0\n")
    }

    @Test func adaptersWithoutKernelSupport() async throws {
        let run = try await BLETool.run(["adapters"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("EAFNOSUPPORT"))
    }
}
