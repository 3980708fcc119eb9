import BLECore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// The product's own real-kernel transports, proven inside the qemu guest: one VM boot
/// (`scripts/kernel-vm --vhci`) runs THIS test binary with `--filter KernelTierGuestTests`
/// (the guest-side suite, enabled there by `BLE_IN_VM=1`), and each scenario here checks
/// that its guest test passed. Enabled only with `BLE_KERNEL_VM=1` (`make test` sets it).
@Suite(
    "Kernel tier (the library on a real kernel, inside the VM)",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BLE_KERNEL_VM"] == "1"),
    .timeLimit(.minutes(10))
)
struct KernelTierTests {
    /// The guest tests, each printing `KERNEL-TIER PASS <name>` when it got to its end.
    static let scenarios = [
        "adapterList", "userChannelGATT", "userChannelScanAndPeripheral", "userChannelErrors", "kernelModeGATT", "kernelModePeripheral", "kernelModeAdapterDown", "kernelModeTimeout", "rawChannelScan",
        "kernelModeCreditChannelEcho", "kernelModeListen", "kernelModeSecurity", "kernelModeEncryptedRead", "kernelModeBonding", "kernelModeWrongPasskey", "kernelModeHighSecurity", "monitorSeesAdapterTraffic", "monitorCommand",
        "l2capCommandOverTheKernel", "l2capCommandListensOverTheKernel", "l2capCommandEncryptedOverTheKernel",
    ] + (KernelTierGuestTests.forgottenBondEnabled ? ["kernelModeForgottenBond"] : [])

    @Test("The guest run of KernelTierGuestTests exits 0")
    func guestRunPasses() async throws {
        let run = try await KernelTierVM.shared.value
        print("kernel tier: one VM boot, guest suite, \(String(format: "%.1f", run.seconds)) s wall time")
        #expect(run.status == 0, "\(run)")
    }

    @Test("Guest scenario passed", arguments: scenarios)
    func scenarioPassed(_ name: String) async throws {
        let run = try await KernelTierVM.shared.value
        #expect(run.stdout.split(separator: "\n").contains { $0 == "KERNEL-TIER PASS \(name)" }, "\(run)")
    }
}

/// One `scripts/kernel-vm --vhci` run of the guest suite, shared by every test above.
enum KernelTierVM {
    struct Run: Sendable, CustomStringConvertible {
        let status: Int32
        let stdout: String
        let stderr: String
        let seconds: Double

        var description: String {
            "exit status \(status) after \(String(format: "%.1f", seconds)) s\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case noTestBinary(Int32)
        case killedAfter(seconds: Int, stderr: String)

        var description: String {
            switch self {
            case .noTestBinary(let err): "cannot find the test binary (readlink /proc/self/exe: errno \(err))"
            case .killedAfter(let s, let stderr): "scripts/kernel-vm did not exit within \(s) s and was killed (qemu dies with it)\n\(stderr)"
            }
        }
    }

    /// Whole-VM limit handed to the script (boot, Bumble start-up and every guest scenario
    /// under software emulation); the script kills qemu when it passes.
    static let vmTimeoutSeconds = 600

    static let shared = Task { try await run() }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static func run() async throws -> Run {
        try await boot(filter: "KernelTierGuestTests", timeoutSeconds: vmTimeoutSeconds,
                       options: ["--vhci"] + (KernelTierGuestTests.forgottenBondEnabled ? ["--env", "BLE_KERNEL_TIER_FORGOTTEN_BOND=1"] : []))
    }

    /// This test binary's path, for the VM (or a child) to run again.
    static func testBinary() throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw Failure.noTestBinary(errno) }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// One boot of `scripts/kernel-vm` with `options` (within `timeoutSeconds`) running this
    /// binary's `filter` suite in the guest. A hung script is killed a minute after that limit
    /// (qemu has a parent-death signal, so it goes too).
    static func boot(filter: String, timeoutSeconds: Int, options: [String]) async throws -> Run {
        let binary = try testBinary()
        let root = repositoryRoot
        let watchdog = timeoutSeconds + 60
        let run = try await Subprocess.run(
            root.appendingPathComponent("scripts/kernel-vm"),
            ["--timeout", "\(timeoutSeconds)"] + options + ["--", binary, "--testing-library", "swift-testing", "--filter", filter],
            in: root, killAfter: .seconds(watchdog))
        if run.killed { throw Failure.killedAfter(seconds: watchdog, stderr: run.stderr) }
        let seconds = Double(run.elapsed.components.seconds) + Double(run.elapsed.components.attoseconds) / 1e18
        return Run(status: run.status, stdout: run.stdout, stderr: run.stderr, seconds: seconds)
    }
}

/// On a host kernel without Bluetooth (most build machines): the kernel-mode channel fails
/// with the typed error that says so, before any VM is involved.
@Suite("L2CAPSocketChannel on a kernel without Bluetooth")
struct L2CAPSocketChannelNoBluetoothTests {
    static var kernelHasBluetooth: Bool {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)  // protocol 0: BTPROTO_L2CAP
        if fd >= 0 { close(fd) }
        return fd >= 0 || errno != EAFNOSUPPORT
    }

    @Test("connect throws .bluetoothUnsupported when socket(AF_BLUETOOTH) gives EAFNOSUPPORT",
          .enabled(if: !kernelHasBluetooth))
    func unsupported() async throws {
        let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_48_52), type: .random)
        do {
            let channel = try await L2CAPSocketChannel.connect(peer: peer, executor: AdapterExecutor(label: "no-bluetooth"), timeout: .seconds(1))
            channel.close()
            Issue.record("connected without Bluetooth in the kernel")
        } catch {
            #expect(error == .bluetoothUnsupported)
            #expect("\(error)".contains("EAFNOSUPPORT"))
        }
    }

    @Test("listen throws .bluetoothUnsupported when socket(AF_BLUETOOTH) gives EAFNOSUPPORT",
          .enabled(if: !kernelHasBluetooth))
    func listenUnsupported() throws {
        #expect(throws: L2CAPSocketError.bluetoothUnsupported) {
            try L2CAPSocketChannel.listen(psm: 0x0081, executor: AdapterExecutor(label: "no-bluetooth"))
        }
    }
}
