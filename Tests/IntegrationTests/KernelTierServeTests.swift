import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The kernel as the central against `ble serve`, proven inside the qemu guest: one VM boot
/// (`scripts/kernel-vm --vhci --second-adapter`, two adapters on one Bumble link) runs THIS
/// test binary with `--filter KernelTierServeGuestTests` and `BLE_KERNEL_TIER_SERVE=1`, and
/// the test here checks that the guest scenario passed. Enabled only with `BLE_KERNEL_VM=1`
/// (`make test` sets it).
@Suite(
    "Kernel tier (the kernel as central against ble serve, inside the VM)",
    .enabled(if: ProcessInfo.processInfo.environment["BLE_KERNEL_VM"] == "1"),
    .timeLimit(.minutes(10))
)
struct KernelTierServeTests {
    /// Whole-VM limit handed to the script (boot, Bumble start-up, the scenario); a loaded
    /// machine stretches the boot and Bumble's imports under emulation to minutes.
    static let vmTimeoutSeconds = 480

    @Test("The guest run of KernelTierServeGuestTests exits 0 and its scenario passed")
    func guestRunPasses() async throws {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw KernelTierVM.Failure.noTestBinary(errno) }
        let binary = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let root = KernelTierVM.repositoryRoot
        let watchdog = Self.vmTimeoutSeconds + 60
        let run = try await Subprocess.run(
            root.appendingPathComponent("scripts/kernel-vm"),
            ["--timeout", "\(Self.vmTimeoutSeconds)", "--vhci", "--second-adapter", "--env", "BLE_KERNEL_TIER_SERVE=1", "--",
             binary, "--testing-library", "swift-testing", "--filter", "KernelTierServeGuestTests"],
            in: root, killAfter: .seconds(watchdog))
        if run.killed { throw KernelTierVM.Failure.killedAfter(seconds: watchdog, stderr: run.stderr) }
        let seconds = Double(run.elapsed.components.seconds) + Double(run.elapsed.components.attoseconds) / 1e18
        print("kernel tier, the kernel as central against ble serve: one VM boot, \(String(format: "%.1f", seconds)) s wall time")
        let report = "exit status \(run.status)\n--- stdout ---\n\(run.stdout)\n--- stderr ---\n\(run.stderr)"
        #expect(run.status == 0, "\(report)")
        #expect(run.stdout.split(separator: "\n").contains { $0 == "KERNEL-TIER PASS kernelCentralAgainstServe" }, "\(report)")
    }
}
