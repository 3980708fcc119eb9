import Testing
import ATT
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
@testable import GATTClient

/// The GATT client's one-off tasks are tasks of the link's host (`L2CAPChannel.adoptTask`),
/// which `Central.close()` cancels and awaits, or end with the call that started them: the
/// close of an enhanced ATT bearer after its transaction timeout, an enhanced bearer's
/// transmissions (over an LE credit-based channel), the Execute Write that cancels a prepare
/// queue after a procedure's deadline, and the reader of `writeAndAwaitNotification`. In each
/// test the peer stops answering, so the task waits until `close()` ends it; afterwards no
/// task of the host is left and nothing more reaches the controller.
@Suite(.timeLimit(.minutes(1)))
struct PeripheralCloseBackgroundTests {
    /// `close()`, then: no background task left, and nothing more sent to the controller.
    static func closeAndCheck(_ bed: LabBed) async {
        await bed.central.close()
        #expect(await bed.central.host.backgroundTasks.isEmpty)
        let sent = bed.vc.commandsReceived.count, frames = bed.vc.l2capReceived.count
        await bed.vc.settle()
        #expect(bed.vc.commandsReceived.count == sent)
        #expect(bed.vc.l2capReceived.count == frames)
    }

    @Test func closeEndsTheCloseOfAnEnhancedBearerAfterItsTransactionTimeout() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        try await EATTRequestTests.openForced(bed, peerCIDs: [0x0050, 0x0051])
        let silent = bed.vc.task { try await peripheral.read(Lab.pattern) }
        _ = try await bed.vc.waitForL2CAP(channelID: 0x0050)
        await bed.vc.advance(by: .seconds(30))
        _ = await silent.result
        // The bearer's channel is closed (Disconnection Request, Vol 3, Part A, 4.6); the peer
        // never answers, so the close waits.
        try await bed.vc.waitUntil("Disconnection Request") { vc in
            vc.signalingReceived.contains { $0.body == .disconnectionRequest(destinationCID: 0x0050, sourceCID: 0x0040) }
        }
        #expect(await bed.central.host.backgroundTasks.count >= 1)
        await Self.closeAndCheck(bed)
    }

    @Test func closeEndsATransmissionOfAnEnhancedBearerThatWaitsForCredits() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        // The peer accepts with no initial credits (Part A, 4.26) and never grants any.
        #expect(try await EATTRequestTests.openForced(bed, peerCIDs: [0x0050], credits: 0).isEnhanced)
        let before = Set(await bed.central.host.backgroundTasks.keys)
        let reading = bed.vc.task { try await peripheral.read(Lab.pattern) }
        // The Read Request's transmission waits for a credit, in a task of the host.
        await bed.vc.settle()
        #expect(!Set(await bed.central.host.backgroundTasks.keys).subtracting(before).isEmpty)
        await Self.closeAndCheck(bed)
        _ = await reading.result
        #expect(bed.vc.l2capReceived.allSatisfy { $0.channelID != 0x0050 }, "no K-frame went out without a credit")
    }

    @Test func closeEndsTheExecuteWriteThatCancelsAPrepareQueueAfterTheProcedureDeadline() async throws {
        let bed = try await LabBed()
        // A procedure limit under the 30 s transaction timeout: the long write's caller stops
        // waiting first, and the cancelling Execute Write (flags 0x00, Vol 3, Part F, 3.4.6.3)
        // is queued behind the unanswered Prepare Write Request.
        let peripheral = try await Peripheral(connection: bed.link, procedureTimeout: .seconds(10))
        _ = try await peripheral.resolve(Lab.scratch)
        let mtu = Int(await peripheral.mtu)
        bed.gate.close()
        let writing = bed.vc.task { try await peripheral.write([UInt8](repeating: 0x5A, count: mtu + 10), to: Lab.scratch) }
        let handle = try #require(bed.vc.handle(of: bed.peer))
        try await bed.vc.waitUntil("Prepare Write Request") { vc in vc.framesReceived.contains { $0.handle == handle && $0.channelID == 0x0004 && $0.payload.first == 0x16 } }
        await bed.vc.settle()
        let before = Set(await bed.central.host.backgroundTasks.keys)
        await bed.vc.advance(by: .seconds(10))
        await #expect {
            try await writing.value
        } throws: { error in
            guard case GATTError.procedureTimeout = error else { return false }
            return true
        }
        await bed.vc.settle()
        // The Execute Write waits behind the unanswered Prepare Write, in a task of the host.
        #expect(await peripheral.bearer.queuedRequestCount == 1)
        // (Compared by key: a task of the link set-up may end meanwhile.)
        #expect(Set(await bed.central.host.backgroundTasks.keys).subtracting(before).count == 1)
        await Self.closeAndCheck(bed)
        #expect(!bed.attPDUs(on: handle).contains { $0.first == 0x18 }, "the queued Execute Write never went out")
    }

    @Test func closeEndsWriteAndAwaitNotificationAndItsReader() async throws {
        weak var weakPeripheral: Peripheral?
        weak var weakHost: HCIHost?
        let vc: VirtualController
        do {
            let bed = try await LabBed()
            vc = bed.vc
            weakPeripheral = bed.peripheral
            weakHost = bed.central.host
            let handle = try #require(bed.vc.handle(of: bed.peer))
            let peripheral = bed.peripheral
            // The lab server never notifies Lab.notifyCounter on a write to Lab.scratch.
            let call = bed.vc.task { try await peripheral.writeAndAwaitNotification([0x01], to: Lab.scratch, response: Lab.notifyCounter) }
            try await bed.vc.waitUntil("Write Request") { vc in vc.framesReceived.contains { $0.handle == handle && $0.channelID == 0x0004 && $0.payload.count == 4 && $0.payload.first == 0x12 } }
            await bed.vc.settle()
            await Self.closeAndCheck(bed)
            await #expect {
                _ = try await call.value
            } throws: { error in
                guard case GATTError.disconnected = error else { return false }
                return true
            }
        }
        vc.closeTransport()
        await vc.advance(by: .seconds(60))
        #expect(weakPeripheral == nil)
        #expect(weakHost == nil)
    }
}
