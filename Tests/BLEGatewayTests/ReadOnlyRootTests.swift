import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// `ble gateway` on a read-only root, as on an embedded gateway or under the unit's
/// `ProtectSystem=strict`: in a mount namespace of its own (`unshare -m`) every mount is
/// read-only except the state directory (the unit's `StateDirectory=`, where `BLE_BOND_DIR`
/// points). The gateway reads its config from the read-only tree, comes online, publishes a
/// device and stops cleanly, and its log has no failed write: nothing else needs writing.
@Suite(.serialized) struct ReadOnlyRootTests {
    static let unshare = "/usr/bin/unshare"
    static var canMakeANamespace: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: unshare) }

    /// Makes every mount but `$1` read-only in the new namespace, then runs the rest.
    static let readOnlyEverywhereBut = """
        set -e
        state=$1; shift
        mount --make-rprivate /
        mount --bind "$state" "$state"
        awk '{print $2}' /proc/self/mounts | while read -r m; do
            [ "$m" = "$state" ] || mount -o remount,bind,ro "$m" 2>/dev/null || true
        done
        if touch /tmp/.ble-readonly-probe 2>/dev/null; then echo "the root is still writable" >&2; exit 97; fi
        exec "$@"
        """

    @Test(.enabled(if: canMakeANamespace, "needs root and unshare (util-linux) for a mount namespace"))
    func runsWithOnlyItsStateDirectoryWritable() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        // Flags; Complete Local Name "ro".
        let vc = GatewayBed.controller(advertiser: 0xC3_00_00_00_00_02, [0x02, 0x01, 0x06, 0x03, 0x09, 0x72, 0x6F])
        let spec = try vc.servePseudoTerminal()

        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ble-readonly-\(UUID().uuidString)")
        let state = scratch.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = scratch.appendingPathComponent("gateway.json")
        try #"{"mqtt": {"url": "\#(broker.url)"}, "id": "readonly", "metricsIntervalSeconds": 1}"#.write(to: config, atomically: true, encoding: .utf8)

        let child = try Child(path: Self.unshare, [
            "-m", "/bin/sh", "-c", Self.readOnlyEverywhereBut, "sh", state.path,
            "/usr/bin/env", "BLE_BOND_DIR=\(state.path)/bonds",
            GatewayProcessTests.ble, "-d", spec, "gateway", "--config", config.path,
        ])
        let log = Task { await Child.read(child.stderr, timeout: .seconds(30)) { _ in false } }
        _ = try await watcher.next("ble/readonly/status") { $0.text == "online" }
        let m = try await watcher.next("ble/readonly/devices/C30000000002")
        #expect(m.text.contains(#""name":"ro""#), "\(m.text)")
        // A metrics message after the device: the gateway kept running past its first publish.
        _ = try await watcher.next("ble/readonly/metrics")
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(10)) == 0)
        _ = try await watcher.next("ble/readonly/status") { $0.text == "offline" }
        await watcher.stop()
        let text = await log.value
        #expect(!text.contains("Read-only file system") && !text.contains("EROFS"), "\(text)")
        // Outside the namespace the tree is writable again, and nothing of the gateway's is in it.
        #expect(!FileManager.default.fileExists(atPath: "/tmp/.ble-readonly-probe"))
    }
}
