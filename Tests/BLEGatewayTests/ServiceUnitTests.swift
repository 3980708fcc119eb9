import BLETestSupport
import Foundation
import Testing

/// dist/ble-gateway.service against what docs/gateway.md's install steps and the gateway
/// need, and against systemd's own checker where it is installed.
@Suite struct ServiceUnitTests {
    static let unitURL = GatewayProcessTests.packageRoot.appendingPathComponent("dist/ble-gateway.service")
    static let analyze = "/usr/bin/systemd-analyze"

    /// `[Service]` and the rest: each key's values in order (a key may repeat).
    static func unit() throws -> [String: [String]] {
        var entries: [String: [String]] = [:]
        var section = ""
        for raw in try String(contentsOf: unitURL, encoding: .utf8).split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") { section = String(line.dropFirst().dropLast()); continue }
            guard let eq = line.firstIndex(of: "=") else { continue }
            entries["\(section).\(line[..<eq])", default: []].append(String(line[line.index(after: eq)...]))
        }
        return entries
    }

    /// The install section of docs/gateway.md.
    static func installDocs() throws -> String {
        let docs = try String(contentsOf: GatewayProcessTests.packageRoot.appendingPathComponent("docs/gateway.md"), encoding: .utf8)
        return try #require(docs.components(separatedBy: "\n## Install\n").dropFirst().first?.components(separatedBy: "\n## ").first)
    }

    @Test func theUnitRunsTheInstalledGatewayAsDocumented() throws {
        let unit = try Self.unit()
        let docs = try Self.installDocs()
        let exec = try #require(unit["Service.ExecStart"]?.first).split(separator: " ").map(String.init)
        // The binary and the config where the install steps put them.
        #expect(exec.first == "/usr/local/bin/ble")
        #expect(docs.contains("install -m 0755 .build/release/ble /usr/local/bin/ble"))
        #expect(Array(exec.dropFirst()) == ["-d", "hci0", "gateway", "--config", "/etc/ble-gateway.json"])
        #expect(docs.contains("/etc/ble-gateway.json") && docs.contains("/etc/systemd/system/ble-gateway.service"))
        #expect(unit["Service.ReadOnlyPaths"] == ["/etc/ble-gateway.json"])
        // Not root: a dynamic user (or a named one), with only the user channel's capabilities.
        #expect(unit["Service.DynamicUser"] == ["yes"] || (unit["Service.User"]?.first).map { $0 != "root" && $0 != "0" } == true)
        #expect(unit["Service.User"]?.contains { $0 == "root" || $0 == "0" } != true)
        #expect(unit["Service.AmbientCapabilities"] == ["CAP_NET_ADMIN CAP_NET_RAW"])
        #expect(unit["Service.CapabilityBoundingSet"] == ["CAP_NET_ADMIN CAP_NET_RAW"])
        #expect(unit["Service.NoNewPrivileges"] == ["yes"])
        #expect(docs.contains("`CAP_NET_ADMIN` and `CAP_NET_RAW`"))
        // Restarted on failure, but not after a config mistake (`ble gateway` exits 2).
        #expect(unit["Service.Restart"] == ["on-failure"])
        #expect(unit["Service.RestartPreventExitStatus"] == ["2"])
        // `systemctl reload` is SIGHUP, which reads the config again.
        #expect(unit["Service.ExecReload"] == ["/bin/kill -HUP $MAINPID"])
        #expect(docs.contains("systemctl reload ble-gateway") && docs.contains("SIGHUP"))
        // Bonds in the state directory systemd gives the dynamic user.
        #expect(unit["Service.StateDirectory"] == ["ble-gateway"])
        #expect(unit["Service.Environment"]?.contains("BLE_BOND_DIR=/var/lib/ble-gateway/bonds") == true)
        #expect(docs.contains("/var/lib/ble-gateway/bonds"))
        #expect(unit["Install.WantedBy"] == ["multi-user.target"])
    }

    /// systemd's checker on the unit, with ExecStart's binary replaced by the built `ble`
    /// (the checker requires it to exist). Any line it prints (an unknown key, a bad value) fails.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: analyze),
                   "systemd-analyze is not installed (Debian package systemd); the unit's keys are checked by theUnitRunsTheInstalledGatewayAsDocumented"))
    func systemdAnalyzeVerifyAcceptsTheUnit() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwunit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let copy = dir.appendingPathComponent("ble-gateway.service")
        let text = try String(contentsOf: Self.unitURL, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/ble "))
        try text.replacingOccurrences(of: "ExecStart=/usr/local/bin/ble ", with: "ExecStart=\(GatewayProcessTests.ble) ")
            .write(to: copy, atomically: true, encoding: .utf8)
        let child = try Child(path: Self.analyze, ["verify", copy.path])
        let output = await Child.read(child.stderr, timeout: .seconds(30)) { _ in false }
        #expect(await child.waitForExit(timeout: .seconds(30)) == 0, "\(output)")
        #expect(output.isEmpty, "\(output)")
    }
}
