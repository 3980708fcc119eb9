import Dispatch
import Testing
import BLECore
import BLETestSupport
import BLEWire
import BLETransport

/// Another program on the same controller (a second process on a UART, one left running)
/// sends HCI_Reset: the controller drops this host's links and scans and answers the other
/// program with Command Complete for HCI_Reset (Vol 4, Part E, 7.3.2, opcode 0x0C03), which
/// this host reads too. Without a reaction the host would go on as if it still scanned.
@Suite(.timeLimit(.minutes(1)))
struct ForeignResetTests {
    /// Command Complete (event 0x0E, Vol 4, Part E, 7.7.14): one credit, HCI_Reset, status 0x00.
    static let resetComplete = HCIPacket.event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x03, 0x0C, 0x00]))

    @Test func aResetThisHostDidNotSendIsATransportLossWithItsReason() async throws {
        let (vc, central) = try await VC.stack()
        let scan = await central.scan()
        vc.inject(Self.resetComplete)
        var ended: (any Error)?
        do {
            for try await _ in scan {}
        } catch {
            ended = error
        }
        let reason = try #require(await central.host.lostReason)
        #expect(reason.contains("completed an HCI_Reset (0x0C03) that this host did not send"), "\(reason)")
        #expect(reason.contains("make sure only one program uses the controller"))
        #expect("\(try #require(ended))".contains("lost"), "\(String(describing: ended))")
        #expect(await central.state == .transportLost)
    }

    @Test func aResetCompletionBeforeThisHostsOwnResetIsAnOldAnswerAndIgnored() async throws {
        // The controller end answers HCI_Reset; before anything, it holds a previous
        // program's answer (still in a UART's buffer), which reaches the host first.
        let (hostEnd, controllerEnd) = MemoryTransport.pair(name: "uart")
        let controllerQueue = DispatchQueue(label: "controller")
        let resetComplete = Self.resetComplete
        try controllerEnd.start(on: controllerQueue) { event in
            if case .packet(.command(let c)) = event, c.opcode.rawValue == 0x0C03 { try? controllerEnd.send(resetComplete) }
        }
        // Sent before the host starts: it waits in the host end's inbox and comes first.
        try controllerQueue.sync { try controllerEnd.send(resetComplete) }
        let executor = AdapterExecutor(label: "foreign-reset")
        let host = HCIHost(transport: hostEnd, executor: executor)
        let (lost, lostSink) = AsyncStream.makeStream(of: String.self)
        await host.addEventHandler { if case .transportLost(let why) = $0 { lostSink.yield(why) } }
        try await host.start()
        // The old answer came first and was let go; this host's own reset is answered.
        _ = try await host.send(HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C03)))
        #expect(await host.lostReason == nil)
        // From now on a Reset completion nobody here asked for is another host's.
        try controllerQueue.sync { try controllerEnd.send(resetComplete) }
        var reasons = lost.makeAsyncIterator()
        let why = try #require(await reasons.next())
        #expect(why.contains("another program using uart:host reset it"), "\(why)")
        await host.close()
    }
}
