import Foundation
import Testing

/// `make demo`'s script, run whole as `make demo` runs it: against the bundled Bumble virtual
/// radio and a local mosquitto, with the `ble` of this build.
@Suite(.timeLimit(.minutes(3)))
struct DemoScriptTests {
    @Test func theDemoRunsEveryScene() async throws {
        let root = BLETool.packageRoot
        var env = ProcessInfo.processInfo.environment
        env["BLE"] = BLETool.executable.path
        env["BLE_PYTHON"] = env["BLE_PYTHON"] ?? root.appendingPathComponent(".venv/bin/python").path
        env["NO_COLOR"] = "1"
        env.removeValue(forKey: "BLE_DEVICE")
        // A clean signal state (ChildProcess), so the script's SIGTERMs reach the gateway,
        // mosquitto and the subscriber it starts.
        let demo = try await Subprocess.run(URL(fileURLWithPath: "/bin/bash"), [root.appendingPathComponent("scripts/demo").path],
                                            environment: env, killAfter: .seconds(120))
        let (status, stdout, stderr) = (demo.status, demo.stdout, demo.stderr)
        #expect(status == 0, "\(stdout)\n\(stderr)")
        // The scenes, in order: info, scan, inspect, notifications, the gateway.
        var rest = Substring(stderr)
        for scene in ["$ ble info", "$ ble scan --duration 3", "$ ble inspect", "$ ble read", "$ mosquitto_sub", "$ echo hello | ble serve"] {
            let found = rest.range(of: scene)
            #expect(found != nil, "no scene \(scene) after the previous one")
            rest = found.map { rest[$0.upperBound...] } ?? rest
        }
        #expect(stdout.contains("Heart Rate Measurement"))
        #expect(stdout.components(separatedBy: " bpm").count - 1 == 10, "ten heart-rate notifications")
        #expect(stdout.contains("ble/demo/status online"))
        // The encrypted BTHome sensor of bthome-ble's tests, decrypted with the config's key.
        #expect(stdout.contains(#""decoded":{"temperature":25.06,"humidity":50.55"#), "\(stdout)")
        #expect(stdout.contains(#"ble/demo/responses/1 {"id":"1","command":"connect","ok":true"#))
        #expect(stdout.contains(#"ble/demo/responses/2 {"id":"2","command":"read","ok":true,"value":""#))
        #expect(stdout.contains("the gateway stopped: ble/demo/status offline"))
        #expect(stdout.contains("subscribe C0:00:00:00:00:02 2A19 handle 0x000E: notifications"), "\(stdout)")
    }
}
