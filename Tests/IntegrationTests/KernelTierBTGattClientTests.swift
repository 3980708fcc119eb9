import Foundation
import Testing

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
        let root = KernelTierVM.repositoryRoot
        let extract = try await Subprocess.run(root.appendingPathComponent("scripts/btgatt-client-path"), [], in: root, killAfter: .seconds(300))
        try #require(extract.status == 0 && !extract.killed, "scripts/btgatt-client-path failed (status \(extract.status)): \(extract.stderr)")
        let client = extract.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let run = try await KernelTierVM.boot(filter: "KernelTierBTGattClientGuestTests", timeoutSeconds: KernelTierServeTests.vmTimeoutSeconds,
                                              options: ["--vhci", "--second-adapter", "--env", "BLE_KERNEL_TIER_BTGATT=\(client)"])
        print("kernel tier, btgatt-client against ble serve: one VM boot, \(String(format: "%.1f", run.seconds)) s wall time")
        #expect(run.status == 0, "\(run)")
        for scene in ["btgattClientAgainstServe", "btgattClientRefusedWithoutKernelSMP", "btgattClientPairsMediumThroughKernelSMP", "btgattClientPairsHighThroughKernelSMP"] {
            #expect(run.stdout.split(separator: "\n").contains { $0 == "KERNEL-TIER PASS \(scene)" }, "\(scene): \(run)")
        }
    }
}
