import BLECore
import Foundation
import Testing

/// `make deb` (scripts/make-deb) on the debug `ble`, as CLIPackagingTests does for `make install`
/// (`make deb` alone packages the static release binary of `make dist`): the package holds the
/// binary, man page, completions, systemd unit and sample config and depends on the packages of
/// the binary's libraries; installed by dpkg into a throwaway root (`--root`, maintainer scripts
/// run without chroot, `DPKG_ROOT` set), postinst gives the binary exactly CAP_NET_ADMIN and
/// CAP_NET_RAW, a normal user runs `ble --version`, and purging it leaves the gateway's bonds.
@Suite struct DebianPackageTests {
    static var canInstall: Bool {
        getuid() == 0 && ["/usr/bin/dpkg-deb", "/usr/bin/dpkg-shlibdeps", "/usr/sbin/setcap", "/usr/sbin/getcap", "/usr/bin/setpriv"]
            .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(.enabled(if: canInstall, "needs root (setcap), dpkg-dev (dpkg-shlibdeps), libcap2-bin and util-linux's setpriv"))
    func buildsInstallsRunsAndRemoves() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ble-deb-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let root = scratch.appendingPathComponent("root")
        for dir in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/ble-gateway/bonds/hci0"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        // The user nobody must reach the installed binary.
        for dir in [scratch, root] { #expect(chmod(dir.path, 0o755) == 0) }
        try Data().write(to: root.appendingPathComponent("var/lib/dpkg/status"))
        let bond = root.appendingPathComponent("var/lib/ble-gateway/bonds/hci0/C0:11:22:33:44:55-random")
        try Data("a bond".utf8).write(to: bond)

        var environment = ProcessInfo.processInfo.environment
        environment["BLE_DEB_IGNORE_MISSING"] = "1"   // the debug binary's Swift libraries
        environment["BLE_DEB_COMPRESSION"] = "none"
        let make = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/make"),
                                            ["-s", "-C", BLETool.packageRoot.path, "deb", "BLE_BIN=\(BLETool.executable.path)", "DEB_DIR=\(scratch.path)"],
                                            environment: environment, killAfter: .seconds(120))
        #expect(make.status == 0, "\(make.stderr)")
        let arch = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/dpkg"), ["--print-architecture"], killAfter: .seconds(10))
        let deb = scratch.appendingPathComponent("ble_\(SwiftBLEHost.version)_\(arch.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).deb")
        #expect(make.stdout == deb.path + "\n", "\(make.stdout)")

        let contents = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/dpkg-deb"), ["--contents", deb.path], killAfter: .seconds(20))
        for path in ["./usr/bin/ble", "./usr/share/man/man1/ble.1.gz", "./usr/share/bash-completion/completions/ble",
                     "./usr/share/zsh/vendor-completions/_ble", "./lib/systemd/system/ble-gateway.service",
                     "./usr/share/doc/ble/examples/ble-gateway.json", "./usr/share/doc/ble/copyright"] {
            #expect(contents.stdout.contains(" \(path)\n"), "\(path) not in the package: \(contents.stdout)")
        }
        #expect(!contents.stdout.contains("./var/lib/ble-gateway"), "the package must not own the bonds")
        let depends = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/dpkg-deb"), ["--field", deb.path, "Depends"], killAfter: .seconds(20))
        for package in ["libbluetooth3", "libc6", "libmosquitto1", "libssl3", "libyaml-0-2", "libcap2-bin"] {
            #expect(depends.stdout.contains(package), "\(depends.stdout)")
        }

        let dpkg = ["--root=\(root.path)", "--log=/dev/null", "--force-script-chrootless"]
        let install = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/dpkg"), dpkg + ["--force-depends", "--install", deb.path],
                                               environment: environment, killAfter: .seconds(60))
        #expect(install.status == 0, "\(install.stdout) \(install.stderr)")
        let installed = root.appendingPathComponent("usr/bin/ble").path
        let caps = try await Subprocess.run(URL(fileURLWithPath: "/usr/sbin/getcap"), [installed], killAfter: .seconds(10))
        #expect(caps.stdout == "\(installed) cap_net_admin,cap_net_raw=ep\n", "\(caps.stdout) \(caps.stderr)")
        let unit = try String(contentsOfFile: root.appendingPathComponent("lib/systemd/system/ble-gateway.service").path, encoding: .utf8)
        #expect(unit.contains("\nExecStart=/usr/bin/ble -d hci0 gateway --config /etc/ble-gateway.json\n") && !unit.contains("/usr/local/bin"), "\(unit)")
        let sample = try Data(contentsOf: root.appendingPathComponent("usr/share/doc/ble/examples/ble-gateway.json"))
        #expect(try JSONSerialization.jsonObject(with: sample) is [String: Any])

        let version = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/setpriv"),
                                               ["--reuid=65534", "--regid=65534", "--clear-groups", installed, "--version"],
                                               environment: environment, killAfter: .seconds(20))
        #expect(version.stdout == "ble \(SwiftBLEHost.version)\n", "\(version.stdout) \(version.stderr)")

        let purge = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/dpkg"), dpkg + ["--purge", "ble"], environment: environment, killAfter: .seconds(60))
        #expect(purge.status == 0, "\(purge.stdout) \(purge.stderr)")
        #expect(!FileManager.default.fileExists(atPath: installed))
        #expect(try String(contentsOf: bond, encoding: .utf8) == "a bond")
    }
}
