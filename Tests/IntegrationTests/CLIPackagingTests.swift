import BLECore
import Foundation
import Testing

/// Packaging: `ble --version`, the package's version constant and CHANGELOG.md agree; the
/// LICENSE is the Apache License 2.0; `make install PREFIX=...` puts ble, the man page and
/// the bash and zsh completions in place, and the installed pieces work.
@Suite struct CLIPackagingTests {
    static let root = BLETool.packageRoot

    @Test func versionAgreesEverywhere() async throws {
        let run = try await BLETool.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout == "ble \(SwiftBLEHost.version)\n")
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let latest = changelog.split(separator: "\n").first { $0.hasPrefix("## [") }
        #expect(latest?.hasPrefix("## [\(SwiftBLEHost.version)]") == true, "\(latest ?? "no entry")")
        let man = try String(contentsOf: Self.root.appendingPathComponent("docs/ble.1"), encoding: .utf8)
        #expect(man.contains("\"swift-ble-host \(SwiftBLEHost.version)\""))
        let license = try String(contentsOf: Self.root.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(license.contains("Apache License") && license.contains("Version 2.0, January 2004"))
    }

    /// Every command `ble --help` lists has its entry in the man page.
    @Test func theManPageHasEveryCommand() async throws {
        let help = try await BLETool.run(["--help"])
        let commands = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "Commands:" }.dropFirst()
            .prefix { !$0.isEmpty }.compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(commands.count >= 13 && commands.contains("gateway"), "\(commands)")
        let man = try String(contentsOf: Self.root.appendingPathComponent("docs/ble.1"), encoding: .utf8)
        for command in commands {
            #expect(man.contains("\n.B \(command)"), "no entry for \(command) in docs/ble.1")
        }
        #expect(man.contains("BLE_BOND_DIR") && man.contains("bond\\-dir"))
    }

    @Test func makeInstallIntoAPrefix() async throws {
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("ble-install-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: prefix) }
        let make = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/make"),
                                            ["-s", "-C", Self.root.path, "install", "PREFIX=\(prefix.path)", "BLE_BIN=\(BLETool.executable.path)"],
                                            environment: ProcessInfo.processInfo.environment, killAfter: .seconds(60))
        #expect(make.status == 0, "\(make.stderr)")
        for path in ["bin/ble", "share/man/man1/ble.1", "share/bash-completion/completions/ble", "share/zsh/site-functions/_ble"] {
            #expect(FileManager.default.fileExists(atPath: prefix.appendingPathComponent(path).path), "\(path)")
        }
        let installed = prefix.appendingPathComponent("bin/ble").path
        let version = try await Subprocess.run(URL(fileURLWithPath: installed), ["--version"],
                                               environment: ProcessInfo.processInfo.environment, killAfter: .seconds(10))
        #expect(version.stdout == "ble \(SwiftBLEHost.version)\n")

        // The bash completion offers the tool's commands and a command's options.
        let script = "source \"$0\"; PATH=\"$1:$PATH\"; COMP_WORDS=(ble re); COMP_CWORD=1; _ble; echo \"${COMPREPLY[*]}\"; "
            + "COMP_WORDS=(ble read --ra); COMP_CWORD=2; _ble; echo \"${COMPREPLY[*]}\"; "
            + "COMP_WORDS=(ble --bond-dir /tmp read --ra); COMP_CWORD=4; _ble; echo \"${COMPREPLY[*]}\"; "
            + "COMP_WORDS=(ble pair X --io display-); COMP_CWORD=4; _ble; echo \"${COMPREPLY[*]}\""
        let bash = try await Subprocess.run(URL(fileURLWithPath: "/bin/bash"),
                                            ["-c", script, prefix.appendingPathComponent("share/bash-completion/completions/ble").path,
                                             prefix.appendingPathComponent("bin").path],
                                            environment: ProcessInfo.processInfo.environment, killAfter: .seconds(20))
        #expect(bash.stdout == "read\n--raw\n--raw\ndisplay-only display-yesno\n", "\(bash.stdout) \(bash.stderr)")
        let zsh = try String(contentsOf: prefix.appendingPathComponent("share/zsh/site-functions/_ble"), encoding: .utf8)
        #expect(zsh.hasPrefix("#compdef ble\n"))

        // The man page formats without warnings, when groff is there.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") {
            let groff = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/groff"),
                                                 ["-man", "-Tutf8", "-ww", "-z", prefix.appendingPathComponent("share/man/man1/ble.1").path],
                                                 environment: ProcessInfo.processInfo.environment, killAfter: .seconds(20))
            #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff.stderr)")
        }
    }
}
