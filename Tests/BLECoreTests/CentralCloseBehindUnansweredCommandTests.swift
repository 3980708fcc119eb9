import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// `Central.close()` sends HCI Disconnect (Vol 4, Part E, 7.1.6) even when it queues behind a
/// command the controller never answers: the Disconnect's wait for a credit outlasts the
/// holder's own timeout. Virtual time; bytes from the Core Specification, Vol 4, Part E
/// (7.7.15 Command Status, 7.7.65.4 LE Read Remote Features Complete, 7.8.49 LE Set PHY).
@Suite(.timeLimit(.minutes(1)))
struct CentralCloseBehindUnansweredCommandTests {
    static let leReadRemoteFeatures = HCIOpcode(rawValue: 0x2016)
    static let leSetPHY = HCIOpcode(rawValue: 0x2032)
    static let disconnect = HCIOpcode(rawValue: 0x0406)

    @Test func disconnectQueuedBehindAnUnansweredSetPHYGoesOutWhenSetPHYTimesOut() async throws {
        let (vc, central) = try await VC.stack()
        let host = central.host
        // LE Read Remote Features: Command Status (Status 0, Num_HCI_Command_Packets 0), then its
        // Complete event (Status 0, the handle, LE features: encryption, data length extension,
        // 2M PHY). With no credit, the LE Set PHY that the features start stays queued.
        vc.answer(Self.leReadRemoteFeatures, with: .events { command in
            let handle = Array(command.parameters.prefix(2))
            return [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x00, 0x16, 0x20]),
                    HCIEventPacket(code: 0x3E, parameters: [0x04, 0x00] + handle + [0x21, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])]
        }, times: 1)
        vc.answer(Self.leSetPHY, with: .none, times: 1) // no Command Status, as Bumble does
        var parameters = ConnectionRequestParameters.default
        parameters.requestDataLengthExtension = false
        let link = try await central.connect(VC.peer, parameters: parameters)
        let handle = try #require(await link.handle)
        // When `connect` returns, the one waiter may still be LE Read Remote Features (its
        // Command Status not handled yet); LE Set PHY is queued after it. The condition reads
        // the host's queue on the executor, at each change of the count.
        try await host.commandWaiters.waitForCount("LE Set PHY queued") { _ in
            host.assumeIsolated { $0.waitingCommands.map(\.packet.opcode) == [Self.leSetPHY] }
        }
        #expect(await host.waitingCommands.map(\.packet.opcode) == [Self.leSetPHY])

        let closing = vc.task { await central.close() }
        try await host.commandWaiters.waitForCount("HCI Disconnect queued behind LE Set PHY") { $0 == 2 }
        // The credit comes 10 ms later: LE Set PHY goes out first and holds it for its 1 s timeout.
        await vc.advance(by: .milliseconds(10))
        vc.grantCommandCredits(1)
        _ = try await vc.waitForCommand(Self.leSetPHY)
        // The Disconnect's own 1 s passes while LE Set PHY holds the credit: it keeps waiting.
        await vc.advance(by: .milliseconds(990))
        #expect(await host.waitingCommands.map(\.packet.opcode) == [Self.disconnect])
        #expect(!vc.commandsReceived.contains { $0.opcode == Self.disconnect })

        // LE Set PHY times out 1 s after it was sent; HCI Disconnect goes out at once:
        // Connection_Handle, Reason 0x13 (Remote User Terminated Connection).
        await vc.advance(by: .milliseconds(10))
        let sent = try await vc.waitForCommand(Self.disconnect)
        #expect(Array(sent.parameters) == [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
        await closing.value
        #expect(vc.commandsReceived.filter { $0.opcode == Self.disconnect }.count == 1)
        #expect(await host.sentCommands.isEmpty)
        #expect(await host.waitingCommands.isEmpty)
    }
}
