import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real Linux Bluetooth stack, booted under qemu by `scripts/kernel-vm` with a Bumble
/// controller on /dev/vhci. Each test boots one VM (about 30 s under software emulation),
/// so the suite runs only with `BLE_KERNEL_VM=1` (`make test` sets it).
///
/// Expected bytes: HCI_Reset is OGF 0x03 / OCF 0x0003 (Core Specification Vol 4 Part E
/// 7.3.2), sent as H4 type 0x01 (Vol 4 Part A 2); its Command Complete event is code 0x0E
/// with Num_HCI_Command_Packets 1, opcode 0x0C03, Status 0x00 (Vol 4 Part E 7.7.14).
/// Errno values are Linux's: EBUSY 16, ENODEV 19.
@Suite(
    "Kernel VM (real Linux HCI sockets)",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BLE_KERNEL_VM"] == "1"),
    .timeLimit(.minutes(10))
)
struct KernelVMTests {
    @Test("HCI_CHANNEL_USER on the kernel's hci0: HCI_Reset gets its Command Complete")
    func userChannelReset() async throws {
        let run = try await KernelVM.run(["hci-check", "reset", "0"])
        #expect(run.status == 0, "\(run)")
        let lines = run.stdoutLines
        #expect(lines.contains("sent 01 03 0c 00"), "\(run)")
        #expect(lines.contains("received 04 0e 04 01 03 0c 00"), "\(run)")
    }

    @Test("An adapter the kernel has powered on refuses the user channel (EBUSY); a missing one gives ENODEV")
    func userChannelBusyAndNoDevice() async throws {
        let run = try await KernelVM.run([
            "sh", "-c", "hci-check up 0; hci-check bind 0; hci-check bind 7; exit 0",
        ])
        #expect(run.status == 0, "\(run)")
        let lines = run.stdoutLines
        #expect(lines.contains("up hci0: ok"), "\(run)")
        #expect(lines.contains("bind hci0: errno 16 EBUSY"), "\(run)")
        #expect(lines.contains("bind hci7: errno 19 ENODEV"), "\(run)")
    }
}

/// Runs a command inside the kernel VM through `scripts/kernel-vm --vhci`.
private enum KernelVM {
    struct Run: Sendable, CustomStringConvertible {
        let status: Int32
        let stdout: String
        let stderr: String

        var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }

        var description: String {
            "exit status \(status)\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case cannotStart(String, any Error)
        case killedAfter(seconds: Int, stderr: String)

        var description: String {
            switch self {
            case .cannotStart(let path, let error):
                "cannot start \(path): \(error)"
            case .killedAfter(let seconds, let stderr):
                "scripts/kernel-vm did not exit within \(seconds) s and was killed (qemu dies with it)\n\(stderr)"
            }
        }
    }

    /// Whole-VM limit handed to the script, which kills qemu when it passes.
    static let vmTimeoutSeconds = 300
    /// Last resort if the script itself hangs: SIGKILL it; qemu has a parent-death signal
    /// (SIGKILL) set by the script, so it goes too.
    static let watchdogSeconds = vmTimeoutSeconds + 60

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // IntegrationTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()
    }

    static func run(_ command: [String]) async throws -> Run {
        let root = repositoryRoot
        let script = root.appendingPathComponent("scripts/kernel-vm")
        let run: Subprocess.Result
        do {
            run = try await Subprocess.run(script, ["--timeout", "\(vmTimeoutSeconds)", "--vhci", "--"] + command,
                                           in: root, killAfter: .seconds(watchdogSeconds))
        } catch {
            throw Failure.cannotStart(script.path, error)
        }
        if run.killed { throw Failure.killedAfter(seconds: watchdogSeconds, stderr: run.stderr) }
        return Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }
}
