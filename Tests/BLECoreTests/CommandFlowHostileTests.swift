import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import BLEWire

/// A controller that misbehaves in its command flow cannot wedge the host or make it answer
/// the wrong caller. Virtual time only; bytes from the Core Specification, Vol 4, Part E
/// (7.7.14 Command Complete, 7.5.4 Read RSSI, 7.4.6 Read BD_ADDR, 7.4.1 Read Local Version
/// Information).
@Suite(.timeLimit(.minutes(1)))
struct CommandFlowHostileTests {
    static let readRSSI = HCIOpcode(rawValue: 0x1405)
    static let readBDADDR = HCIOpcode(rawValue: 0x1009)

    @Test func lateReadRSSIAnswerNeverCompletesAnotherLinksRead() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        vc.answer(Self.readRSSI, with: .events { _ in [] }, times: 2)
        let first = vc.task { try await host.send(HCICommand.readRSSI(handle: 0x0040), timeout: .seconds(2)) }
        try await vc.waitForCommand(Self.readRSSI)
        await vc.advance(by: .seconds(2))
        await #expect(throws: HCIError.commandTimeout(opcode: Self.readRSSI, milliseconds: 2000)) { try await first.value }

        let second = vc.task { try await host.send(HCICommand.readRSSI(handle: 0x0041), timeout: .seconds(2)) }
        try await vc.waitForCommand(Self.readRSSI, count: 2)
        await vc.settle()
        // Command Complete: Num_HCI_Command_Packets 1, opcode 0x1405, Status 0, Handle 0x0040,
        // RSSI -10: the late answer to the first read, for the other link.
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x05, 0x14, 0x00, 0x40, 0x00, 0xF6])))
        await vc.settle()
        #expect(await host.sentCommands.map(\.packet.opcode) == [Self.readRSSI], "the late answer leaves the second read waiting")
        // The answer for handle 0x0041: RSSI -20.
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x05, 0x14, 0x00, 0x41, 0x00, 0xEC])))
        #expect(try await value(of: second) == [0x00, 0x41, 0x00, 0xEC])
    }

    /// Read BD_ADDR times out, so its Command Complete (which carries no Connection_Handle)
    /// may still come: the next Read BD_ADDR waits, other commands go on, and the late
    /// answer is dropped instead of completing the second read.
    @Test func lateAnswerWithoutAHandleNeverCompletesTheNextCommandWithItsOpcode() async throws {
        let (vc, host, reads, readsBefore, second) = try await secondReadBDADDRAfterATimeout()
        // Read Local Version Information (0x1001) is not held back.
        let version = try await host.send(HCICommand.readLocalVersionInformation(), timeout: .seconds(2))
        #expect(version.first == 0x00)
        #expect(reads() == readsBefore + 1, "the second read waits for the late answer")

        // Command Complete: Num_HCI_Command_Packets 1, opcode 0x1009, Status 0,
        // BD_ADDR 06:05:04:03:02:01: the late answer to the first read.
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x09, 0x10, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])))
        try await vc.waitForCommand(Self.readBDADDR, count: readsBefore + 2)
        #expect(try await value(of: second) == [0x00] + vc.address.littleEndianBytes)
    }

    /// A late answer that never comes holds the opcode back for `lateAnswerGrace` only.
    @Test func theNextCommandWithATimedOutOpcodeGoesOutAfterTheGrace() async throws {
        let (vc, _, reads, readsBefore, second) = try await secondReadBDADDRAfterATimeout()
        await vc.advance(by: .milliseconds(999))
        #expect(reads() == readsBefore + 1)
        await vc.advance(by: .milliseconds(1))
        #expect(try await value(of: second) == [0x00] + vc.address.littleEndianBytes)
        #expect(reads() == readsBefore + 2)
    }

    @Test func zeroCreditWithNothingInFlightDoesNotWedgeTheQueue() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        // Command Complete with opcode 0x0000 (a credit update for no command) and
        // Num_HCI_Command_Packets 0, while the host has nothing outstanding.
        vc.inject(.event(HCIEventPacket(code: 0x0E, parameters: [0x00, 0x00, 0x00])))
        await vc.settle()
        #expect(await host.commandCredits == 0)
        let sentBefore = vc.commandsReceived.count

        let stuck = vc.task { try await host.send(HCICommand.readBDADDR(), timeout: .seconds(2)) }
        try await host.commandWaiters.waitForCount("Read BD_ADDR queued for a credit") { $0 == 1 }
        #expect(await host.waitingCommands.count == 1)
        await vc.advance(by: .milliseconds(1999))
        #expect(vc.commandsReceived.count == sentBefore, "no command goes out without a credit")
        await vc.advance(by: .milliseconds(1))
        let error = HCIError.noCommandCredit(opcode: Self.readBDADDR, milliseconds: 2000)
        await #expect(throws: error) { try await stuck.value }
        #expect(error.description.contains("Num_HCI_Command_Packets 0"))

        // With nothing in flight the host assumed a credit: the next command goes out and completes.
        let next = try await host.send(HCICommand.readBDADDR(), timeout: .seconds(2))
        #expect(next == [0x00] + vc.address.littleEndianBytes)
        #expect(await host.waitingCommands.isEmpty)
    }

    /// HCI_Reset (Vol 4, Part E, 7.3.2) drops every command the controller has: `powerOn()`
    /// fails each pending one at once, naming its opcode, instead of leaving it to its timeout,
    /// and the reset itself does not wait for the credit the unanswered command held.
    @Test func powerOnResetFailsEveryPendingCommandAtOnce() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        vc.answer(Self.readRSSI, with: .events { _ in [] }, times: 1) // sent, never answered: holds the credit
        let sent = Task { try await host.send(HCICommand.readRSSI(handle: 0x0040), timeout: .seconds(30)) }
        try await vc.waitForCommand(Self.readRSSI)
        let queued = Task { try await host.send(HCICommand.readBDADDR(), timeout: .seconds(30)) }
        try await host.commandWaiters.waitForCount("Read RSSI sent and Read BD_ADDR queued") { $0 == 2 }
        #expect(await host.waitingCommands.map(\.packet.opcode) == [Self.readBDADDR])

        // No virtual time passes: both fail because of the reset, not their 30 s timeouts.
        _ = try await central.powerOn()
        await #expect(throws: HCIError.controllerReset(opcode: Self.readRSSI)) { try await sent.value }
        await #expect(throws: HCIError.controllerReset(opcode: Self.readBDADDR)) { try await queued.value }
        #expect(vc.elapsed == .zero)
        #expect(await host.sentCommands.isEmpty)
        #expect(await host.waitingCommands.isEmpty)
        let error = HCIError.controllerReset(opcode: Self.readRSSI)
        #expect("\(error)".contains("(0x1405)") && "\(error)".contains("HCI_Reset"))
    }

    /// A Read BD_ADDR that the controller never answers times out (2 s, virtual time); then a
    /// second Read BD_ADDR is queued. `reads` counts the Read BD_ADDR commands the controller
    /// received, `readsBefore` is that count before the first.
    private func secondReadBDADDRAfterATimeout() async throws -> (
        VirtualController, HCIHost, reads: @Sendable () -> Int, readsBefore: Int, second: Task<[UInt8], any Error>
    ) {
        let (vc, central) = try await VC.stack()
        let host = central.host
        let reads: @Sendable () -> Int = { vc.commandsReceived.filter { $0.opcode == Self.readBDADDR }.count }
        let readsBefore = reads()
        vc.answer(Self.readBDADDR, with: .none, times: 1)
        let first = vc.task { try await host.send(HCICommand.readBDADDR(), timeout: .seconds(2)) }
        try await vc.waitForCommand(Self.readBDADDR, count: readsBefore + 1)
        await vc.advance(by: .seconds(2))
        await #expect(throws: HCIError.commandTimeout(opcode: Self.readBDADDR, milliseconds: 2000)) { try await first.value }

        let second = Task { try await host.send(HCICommand.readBDADDR(), timeout: .seconds(2)) }
        try await host.commandWaiters.waitForCount("second Read BD_ADDR queued") { $0 == 1 }
        return (vc, host, reads, readsBefore, second)
    }
}
