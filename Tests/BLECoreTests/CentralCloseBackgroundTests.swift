import Testing
@testable import BLECore
import BLETestSupport

/// Commands the stack sends with no caller waiting (here LE Read Remote Features, Vol 4,
/// Part E, 7.8.21, of the link set-up after connecting) run as the host's background tasks:
/// `Central.close()` returns only once they have ended, so nothing holds a closed host.
@Suite(.timeLimit(.minutes(1)))
struct CentralCloseBackgroundTests {
    final class Weak: @unchecked Sendable { // set once by the test, read by the same test
        weak var host: HCIHost?
    }

    @Test func closeEndsTheLinkSetUpThatWaitsForAnUnansweredCommand() async throws {
        let weak = Weak()
        let vc: VirtualController
        do {
            // Two command credits: the disconnect of `close()` goes out while that command waits.
            let (controller, central) = try await VC.stack { $0.numHCICommandPackets = 2 }
            vc = controller
            weak.host = central.host
            // HCI_LE_Read_Remote_Features (OGF 0x08, OCF 0x0016) is never answered.
            vc.answer(HCIOpcode(rawValue: 0x2016), with: .none, times: 1)
            _ = try await central.connect(VC.peer)
            _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016))
            #expect(await central.host.backgroundTasks.count == 1)
            await central.close()
            #expect(await central.host.backgroundTasks.isEmpty)
        }
        // The command's 1 s timeout never passed (the clock did not move): the host is gone all the same.
        #expect(weak.host == nil)
        _ = vc
    }
}
