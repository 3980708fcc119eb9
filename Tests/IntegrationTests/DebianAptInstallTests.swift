import BLECore
import BLETestSupport
import Foundation
import Testing

/// `apt-get install ./ble_*.deb` on a fresh Debian: the package of `make deb` (from the debug
/// `ble`, as DebianPackageTests builds it) goes into a copy of a minimal Debian root
/// (scripts/debian-root: debootstrap --variant=minbase, cached under .build), where apt resolves
/// its dependencies (libbluetooth3, libmosquitto1, libssl3, libyaml-0-2, libcap2-bin) from the
/// archive's index and runs postinst under chroot. Then: the binary has exactly CAP_NET_ADMIN
/// and CAP_NET_RAW, the user nobody runs `ble --version` in the root, and `apt-get purge` leaves
/// the bonds under /var/lib/ble-gateway. The debug binary's Swift runtime is bind-mounted
/// read-only into the root at its RUNPATH for that run (`make dist`'s binary carries it inside).
@Suite struct DebianAptInstallTests {
    static let runtime = "/opt/swift/usr/lib/swift/linux"

    static var canInstall: Bool {
        guard getuid() == 0, ["/usr/sbin/debootstrap", "/usr/sbin/chroot", "/usr/bin/unshare", "/usr/bin/dpkg-deb", "/usr/bin/dpkg-shlibdeps", "/usr/bin/flock"]
            .allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else { return false }
        // A mount namespace of its own (a container without CAP_SYS_ADMIN has none).
        guard let probe = try? ChildProcess(path: "/usr/bin/unshare", ["--mount", "/bin/true"]) else { return false }
        return ChildProcess.wait(probe.pid) == 0
    }

    /// Runs `command` under chroot in `root`, in a mount namespace of its own with /proc (and the
    /// Swift runtime when `runtime` is set), as `user` ("UID:GID") when given.
    static func inRoot(_ root: URL, runtime: Bool = false, user: String? = nil, _ command: [String],
                       environment: [String: String]? = nil) async throws -> Subprocess.Result {
        var script = #"root=$1; user=$2; shift 2; mount -t proc proc "$root/proc""#
        if runtime { script += #" && mkdir -p "$root\#(Self.runtime)" && mount --bind -o ro \#(Self.runtime) "$root\#(Self.runtime)""# }
        script += #" && exec chroot ${user:+"--userspec=$user"} "$root" "$@""#
        return try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/unshare"),
                                        ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", root.path, user ?? ""] + command,
                                        environment: environment, killAfter: .seconds(120))
    }

    @Test(.enabled(if: canInstall, "needs root, debootstrap, chroot, unshare (with mount namespaces), flock and dpkg-dev"))
    func aptInstallsRunsAndPurges() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ble-apt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var environment = ProcessInfo.processInfo.environment
        environment["BLE_DEB_IGNORE_MISSING"] = "1"   // the debug binary's Swift libraries
        environment["BLE_DEB_COMPRESSION"] = "none"
        environment["DEBIAN_FRONTEND"] = "noninteractive"
        let make = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/make"),
                                            ["-s", "-C", BLETool.packageRoot.path, "deb", "BLE_BIN=\(BLETool.executable.path)", "DEB_DIR=\(scratch.path)"],
                                            environment: environment, killAfter: .seconds(120))
        try #require(make.status == 0, "\(make.stderr)")
        let deb = URL(fileURLWithPath: make.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

        // A fresh root (the first run makes the cache: debootstrap, 1-3 minutes).
        let root = scratch.appendingPathComponent("root")
        let made = try await Subprocess.run(BLETool.packageRoot.appendingPathComponent("scripts/debian-root"), [root.path, deb.path],
                                            environment: environment, killAfter: .seconds(480))
        try #require(made.status == 0, "scripts/debian-root: \(made.stderr)")
        let bondDirectory = root.appendingPathComponent("var/lib/ble-gateway/bonds/hci0")
        try FileManager.default.createDirectory(at: bondDirectory, withIntermediateDirectories: true)
        let bond = bondDirectory.appendingPathComponent("C0:11:22:33:44:55-random")
        try Data("a bond".utf8).write(to: bond)
        let before = try await Self.inRoot(root, ["dpkg-query", "-W", "-f", "${Package}\n", "libbluetooth3", "libmosquitto1", "libyaml-0-2", "libcap2-bin"])
        #expect(before.stdout.isEmpty, "a fresh root has none of the dependencies yet: \(before.stdout)")
        try FileManager.default.copyItem(at: deb, to: root.appendingPathComponent("tmp/\(deb.lastPathComponent)"))

        let install = try await Self.inRoot(root, ["apt-get", "install", "-y", "/tmp/\(deb.lastPathComponent)"], environment: environment)
        #expect(install.status == 0, "\(install.stdout) \(install.stderr)")
        #expect(install.stdout.contains("Setting up ble (\(SwiftBLEHost.version))"), "\(install.stdout)")
        // dpkg-query lists them by name.
        let installed = try await Self.inRoot(root, ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n",
                                                     "ble", "libbluetooth3", "libmosquitto1", "libssl3", "libyaml-0-2", "libcap2-bin"])
        #expect(installed.stdout == """
            ble installed
            libbluetooth3 installed
            libcap2-bin installed
            libmosquitto1 installed
            libssl3 installed
            libyaml-0-2 installed

            """, "\(installed.stdout) \(installed.stderr)")

        let caps = try await Self.inRoot(root, ["getcap", "/usr/bin/ble"])
        #expect(caps.stdout == "/usr/bin/ble cap_net_admin,cap_net_raw=ep\n", "\(caps.stdout) \(caps.stderr)")
        let version = try await Self.inRoot(root, runtime: true, user: "65534:65534", ["/usr/bin/ble", "--version"])
        #expect(version.stdout == "ble \(SwiftBLEHost.version)\n", "\(version.stdout) \(version.stderr)")

        let purge = try await Self.inRoot(root, ["apt-get", "purge", "-y", "ble"], environment: environment)
        #expect(purge.status == 0, "\(purge.stdout) \(purge.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("usr/bin/ble").path))
        #expect(try String(contentsOf: bond, encoding: .utf8) == "a bond")
    }
}
