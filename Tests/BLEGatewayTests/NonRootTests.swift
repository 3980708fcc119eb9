import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// `ble gateway` as an unprivileged user holding only what dist/ble-gateway.service grants:
/// CAP_NET_ADMIN and CAP_NET_RAW as ambient capabilities (what the HCI user channel needs),
/// no new privileges. setpriv (util-linux) switches to nobody (65534) as systemd would; the
/// radio is the virtual controller on a pseudo-terminal handed to that user. The gateway
/// comes online, publishes a device and stops cleanly on SIGTERM.
@Suite(.serialized) struct NonRootTests {
    static let setpriv = "/usr/bin/setpriv"
    static let nobody: UInt32 = 65534
    static var canSwitchUser: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) }

    @Test(.enabled(if: canSwitchUser, "needs root (to switch to the nobody user) and /usr/bin/setpriv from util-linux"))
    func runsAsNobodyWithOnlyTheUserChannelCapabilities() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        // Flags; Complete Local Name "nr".
        let vc = GatewayBed.controller(advertiser: 0xC3_00_00_00_00_01, [0x02, 0x01, 0x06, 0x03, 0x09, 0x6E, 0x72])
        let spec = try vc.servePseudoTerminal()
        let pty = String(spec.dropFirst("serial:".count).prefix { $0 != "@" })
        #expect(chown(pty, Self.nobody, Self.nobody) == 0)
        let child = try Child(path: Self.setpriv, [
            "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups",
            "--inh-caps=-all,+net_admin,+net_raw", "--ambient-caps=-all,+net_admin,+net_raw",
            "--bounding-set=-all,+net_admin,+net_raw", "--no-new-privs",
            GatewayProcessTests.ble, "-d", spec, "gateway", "--mqtt", broker.url, "--id", "nonroot",
        ])
        _ = try await watcher.next("ble/nonroot/status") { $0.text == "online" }
        let m = try await watcher.next("ble/nonroot/devices/C30000000001")
        #expect(m.text.contains(#""name":"nr""#), "\(m.text)")
        // What the running gateway holds: uid nobody, exactly CAP_NET_ADMIN (12) and CAP_NET_RAW (13).
        let status = try String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)
        let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }, uniquingKeysWith: { a, _ in a })
        #expect(fields["Uid"]?.split(separator: "\t").first == "65534")
        #expect(fields["CapEff"] == "0000000000003000")
        #expect(fields["CapAmb"] == "0000000000003000")
        #expect(fields["NoNewPrivs"] == "1")
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(10)) == 0)
        _ = try await watcher.next("ble/nonroot/status") { $0.text == "offline" }
        await watcher.stop()
    }
}
