import Foundation
import Testing

/// Tests that misbehave on purpose, so `scripts/test-run-tests` can prove what `scripts/run-tests`
/// does with them. Each runs only when `BLE_WATCHDOG_PROBE` asks for it; in a normal run all
/// are reported as skipped.
@Suite struct WatchdogProbeTests {
    static let mode = ProcessInfo.processInfo.environment["BLE_WATCHDOG_PROBE"]

    /// With `BLE_WATCHDOG_PROBE=1`: hangs, so the runner's per-test limit must name it and kill it.
    @Test(.enabled(if: mode == "1"))
    func hangsUntilTheRunnerKillsIt() async {
        // Never resumed, and deaf to cancellation: the kind of await `.timeLimit` cannot end.
        await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
        Issue.record("the probe's continuation was resumed; nothing may resume it")
    }

    /// With `BLE_WATCHDOG_PROBE=fail`: fails, so the runner must pass the failing status on.
    @Test(.enabled(if: mode == "fail"))
    func failsWhenAsked() {
        Issue.record("this test fails on purpose (BLE_WATCHDOG_PROBE=fail)")
    }

    /// With `BLE_WATCHDOG_PROBE=crash`: traps (an index out of range), so the runner must end
    /// its output with the backtrace and this test's name.
    @Test(.enabled(if: mode == "crash"))
    func trapsWhenAsked() {
        let empty = ProcessInfo.processInfo.arguments.filter { _ in false }
        #expect(empty[0].isEmpty, "unreachable: indexing an empty array traps")
    }
}
