import BLETestSupport
import Dispatch
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
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (outPath, errPath) = (scratch.appendingPathComponent("stdout").path, scratch.appendingPathComponent("stderr").path)
        // A clean signal state, so the script's SIGTERMs reach the gateway, mosquitto and
        // the subscriber it starts.
        let demo = try ChildProcess(path: "/bin/bash", [root.appendingPathComponent("scripts/demo").path],
                                    environment: env, stdout: .file(outPath), stderr: .file(errPath))
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            kill(demo.pid, SIGKILL)
        }
        let status = await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            DispatchQueue.global().async { c.resume(returning: ChildProcess.wait(demo.pid)) }
        }
        watchdog.cancel()
        let stdout = try String(contentsOfFile: outPath, encoding: .utf8)
        let stderr = try String(contentsOfFile: errPath, encoding: .utf8)
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
