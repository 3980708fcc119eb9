import BLECore
import Foundation
import Testing

/// Packaging: `ble --version`, the package's version constant and CHANGELOG.md agree; the
/// LICENSE is the Apache License 2.0; `make install PREFIX=...` puts ble, the man page and
/// the bash and zsh completions in place, and the installed pieces work: the man page has an
/// entry for every option `--help` prints, the completions offer what `--help` lists.
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
        let commands = Self.commands(help.stdout)
        #expect(commands.count >= 13 && commands.contains("gateway"), "\(commands)")
        let man = try String(contentsOf: Self.root.appendingPathComponent("docs/ble.1"), encoding: .utf8)
        for command in commands {
            #expect(man.contains("\n.SS \(command)\n.B ble \(command)\n"), "no entry for \(command) in docs/ble.1")
        }
        #expect(man.contains("BLE_BOND_DIR") && man.contains("bond\\-dir"))
    }

    /// Every option `ble COMMAND --help` prints has an entry (a `.TP` tag) in that command's
    /// section of the man page, and every global option one under GLOBAL OPTIONS, so the page
    /// cannot fall behind the tool.
    @Test func theManPageHasEveryOptionOfEveryCommand() async throws {
        let man = try String(contentsOf: Self.root.appendingPathComponent("docs/ble.1"), encoding: .utf8)
        let top = try await BLETool.run(["--help"])
        let global = Self.options(top.stdout, "Global options:")
        #expect(global.count >= 9 && global.contains("--bond-dir"), "\(global)")
        let missingGlobal = global.filter { !Self.tags(man, section: ".SH GLOBAL OPTIONS").contains($0) }
        #expect(missingGlobal.isEmpty, "docs/ble.1 GLOBAL OPTIONS lacks \(missingGlobal)")
        for command in Self.commands(top.stdout) {
            let help = try await BLETool.run([command, "--help"])
            #expect(help.status == 0, "\(command): \(help.stderr)")
            // Each command's help repeats the global options: those are checked above.
            #expect(Set(Self.options(help.stdout, "Global options:")).isSubset(of: global))
            let tags = Self.tags(man, section: ".SS \(command)")
            let missing = Self.options(help.stdout, "Options:").filter { !tags.contains($0) }
            #expect(missing.isEmpty, "docs/ble.1 section \(command) lacks \(missing)")
        }
    }

    /// The command names of `ble --help`.
    static func commands(_ help: String) -> [String] {
        help.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "Commands:" }.dropFirst()
            .prefix { !$0.isEmpty }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// The options ("-c", "--characteristic") of a help text's block that starts with `heading`.
    static func options(_ help: String, _ heading: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != heading }.dropFirst().prefix { !$0.isEmpty }
        return lines.flatMap { line -> [String] in
            guard let m = line.prefixMatch(of: /\ +(?:(-[a-zA-Z]), )?(--[a-z0-9-]+)/) else { return [] }
            return [m.1.map(String.init), String(m.2)].compactMap { $0 }
        }
    }

    /// The option words of the `.TP` tags in the man page section that starts with the line
    /// `heading` and ends at the next `.SS` or `.SH`, with font escapes and `\-` undone.
    static func tags(_ man: String, section heading: String) -> Set<String> {
        let lines = man.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != heading }.dropFirst()
            .prefix { !$0.hasPrefix(".SS ") && !$0.hasPrefix(".SH ") }
        var words: Set<String> = []
        for (tp, tag) in zip(lines, lines.dropFirst()) where tp == ".TP" {
            let plain = tag.replacing(/\\f[BIRP]/, with: "").replacing("\\-", with: "-")
            for word in plain.split(whereSeparator: { " \",[]".contains($0) }) where word.hasPrefix("-") { words.insert(String(word)) }
        }
        return words
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
        let zshScript = try String(contentsOf: prefix.appendingPathComponent("share/zsh/site-functions/_ble"), encoding: .utf8)
        #expect(zshScript.hasPrefix("#compdef ble\n"))

        // The zsh completion, the same cases plus a directory for --import-bluez. Outside the
        // completion system `words` and `CURRENT` are plain parameters, and the builtins it
        // calls are stood in for by functions that print the candidates matching the word
        // being completed, as zsh's matcher would.
        let stubs = "compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -r -- ${(M)@:#${words[CURRENT]}*}; }; "
            + "_describe() { local -a c; c=(\"${(@P)${@[-1]}}\"); c=(${c%%:*}); print -r -- ${(M)c:#${words[CURRENT]}*}; }; "
            + "_files() { print -r -- _files $*; }; "
        let cases = [["ble", "sc"], ["ble", "read", "--ra"], ["ble", "--bond-dir", "/tmp", "read", "--ra"],
                     ["ble", "pair", "X", "--io", "display-"], ["ble", "bonds", "--import-bluez", ""]]
        let zshRuns = cases.map { "words=(\($0.map { "'\($0)'" }.joined(separator: " "))); CURRENT=\($0.count); source \"$0\"; " }.joined()
        let zsh = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/zsh"),
                                           ["-f", "-c", stubs + "PATH=\"$1:$PATH\"; " + zshRuns,
                                            prefix.appendingPathComponent("share/zsh/site-functions/_ble").path,
                                            prefix.appendingPathComponent("bin").path],
                                           environment: ProcessInfo.processInfo.environment, killAfter: .seconds(20))
        #expect(zsh.stdout == "scan\n--raw\n--raw\ndisplay-only display-yesno\n_files -/\n", "\(zsh.stdout) \(zsh.stderr) (zsh comes with make apt)")

        // The man page formats without warnings, when groff is there.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") {
            let groff = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/groff"),
                                                 ["-man", "-Tutf8", "-ww", "-z", prefix.appendingPathComponent("share/man/man1/ble.1").path],
                                                 environment: ProcessInfo.processInfo.environment, killAfter: .seconds(20))
            #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff.stderr)")
        }
    }
}
