import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// BlueZ's own GATT client (btgatt-client, BlueZ 5.66 from Debian's bluez-source) on the
/// kernel's L2CAP/ATT against `ble serve`, and pairing through the kernel's SMP from it
/// (`-s medium`, `-s high`; refused without SMP), proven inside the qemu guest: one VM boot
/// (`scripts/kernel-vm --vhci --second-adapter`) runs THIS test binary with
/// `--filter KernelTierBTGattClientGuestTests`, handing it the client extracted by
/// `scripts/btgatt-client-path`. Enabled only with `BLE_KERNEL_VM=1` (`make test` sets it).
@Suite(
    "Kernel tier (BlueZ's btgatt-client against ble serve, inside the VM)",
    .enabled(if: ProcessInfo.processInfo.environment["BLE_KERNEL_VM"] == "1"),
    .timeLimit(.minutes(10))
)
struct KernelTierBTGattClientTests {
    @Test("The guest run of KernelTierBTGattClientGuestTests exits 0 and its scenario passed")
    func guestRunPasses() async throws {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw KernelTierVM.Failure.noTestBinary(errno) }
        let binary = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let root = KernelTierVM.repositoryRoot
        let extract = try await Subprocess.run(root.appendingPathComponent("scripts/btgatt-client-path"), [], in: root, killAfter: .seconds(300))
        try #require(extract.status == 0 && !extract.killed, "scripts/btgatt-client-path failed (status \(extract.status)): \(extract.stderr)")
        let client = extract.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let limit = KernelTierServeTests.vmTimeoutSeconds
        let watchdog = limit + 60
        let run = try await Subprocess.run(
            root.appendingPathComponent("scripts/kernel-vm"),
            ["--timeout", "\(limit)", "--vhci", "--second-adapter", "--env", "BLE_KERNEL_TIER_BTGATT=\(client)", "--",
             binary, "--testing-library", "swift-testing", "--filter", "KernelTierBTGattClientGuestTests"],
            in: root, killAfter: .seconds(watchdog))
        if run.killed { throw KernelTierVM.Failure.killedAfter(seconds: watchdog, stderr: run.stderr) }
        let seconds = Double(run.elapsed.components.seconds) + Double(run.elapsed.components.attoseconds) / 1e18
        print("kernel tier, btgatt-client against ble serve: one VM boot, \(String(format: "%.1f", seconds)) s wall time")
        let report = "exit status \(run.status)\n--- stdout ---\n\(run.stdout)\n--- stderr ---\n\(run.stderr)"
        #expect(run.status == 0, "\(report)")
        for scene in ["btgattClientAgainstServe", "btgattClientRefusedWithoutKernelSMP", "btgattClientPairsMediumThroughKernelSMP", "btgattClientPairsHighThroughKernelSMP"] {
            #expect(run.stdout.split(separator: "\n").contains { $0 == "KERNEL-TIER PASS \(scene)" }, "\(scene): \(report)")
        }
    }
}
