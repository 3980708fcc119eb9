import Testing
import BLECore
import BLEWire

/// `HCIFlowControl` from tables: (state, event) -> (actions, state). The counts follow Core
/// Spec Vol 4, Part E: 4.4 (Num_HCI_Command_Packets replaces the count; one command at
/// power-on), 4.1 (the host never has more packets in the controller than
/// Total_Num_LE_ACL_Data_Packets), 4.3 (a Disconnection Complete frees the link's buffers)
/// and 7.7.19 (Number Of Completed Packets counts the packets completed since the last report).
@Suite struct HCIFlowControlTests {
    typealias Flow = HCIFlowControl

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let state: Flow
        let event: Flow.Event
        let actions: [Flow.Action]
        let after: Flow
        var testDescription: String { name }
    }

    static let commandRows: [Row] = [
        Row(name: "a command uses the one credit of power-on", state: Flow(), event: .commandSent,
            actions: [], after: Flow(commandCredits: 0)),
        Row(name: "Num_HCI_Command_Packets 5 opens five", state: Flow(commandCredits: 0), event: .commandCreditsReported(5),
            actions: [.sendCommands], after: Flow(commandCredits: 5)),
        Row(name: "the reported count replaces the old one, it is not added", state: Flow(commandCredits: 3), event: .commandCreditsReported(1),
            actions: [.sendCommands], after: Flow(commandCredits: 1)),
        Row(name: "Num_HCI_Command_Packets 0 stops commands", state: Flow(commandCredits: 2), event: .commandCreditsReported(0),
            actions: [], after: Flow(commandCredits: 0)),
        Row(name: "a sent command's timeout frees the credit it held", state: Flow(commandCredits: 0), event: .sentCommandTimedOut,
            actions: [.sendCommands], after: Flow(commandCredits: 1)),
        Row(name: "a timeout never lowers credits", state: Flow(commandCredits: 3), event: .sentCommandTimedOut,
            actions: [.sendCommands], after: Flow(commandCredits: 3)),
        Row(name: "an expired credit wait with a command in flight waits for its completion", state: Flow(commandCredits: 0),
            event: .creditWaitExpired(commandsInFlight: 1), actions: [], after: Flow(commandCredits: 0)),
        Row(name: "an expired credit wait with nothing in flight assumes one", state: Flow(commandCredits: 0),
            event: .creditWaitExpired(commandsInFlight: 0), actions: [.sendCommands], after: Flow(commandCredits: 1)),
        Row(name: "the reset gets a credit once the pending commands are dropped", state: Flow(commandCredits: 0),
            event: .pendingCommandsDroppedForReset, actions: [.sendCommands], after: Flow(commandCredits: 1)),
        Row(name: "a lost transport goes back to the one credit of power-on", state: Flow(commandCredits: 4), event: .commandsReset,
            actions: [], after: Flow(commandCredits: 1)),
    ]

    static let aclRows: [Row] = [
        Row(name: "LE Read Buffer Size 251 x 8 frees every buffer", state: Flow(), event: .bufferSizeRead(packetLength: 251, packetCount: 8),
            actions: [], after: Flow(aclPacketLength: 251, aclPacketCount: 8, aclCredits: 8)),
        Row(name: "a new link holds nothing", state: acl(credits: 8, [:]), event: .linkOpened(handle: 0x0040),
            actions: [], after: acl(credits: 8, [0x0040: 0])),
        Row(name: "a packet fills one buffer", state: acl(credits: 8, [0x0040: 0]), event: .aclSent(handle: 0x0040),
            actions: [], after: acl(credits: 7, [0x0040: 1])),
        Row(name: "completed packets free their buffers", state: acl(credits: 5, [0x0040: 3]), event: .completedPackets(handle: 0x0040, count: 2),
            actions: [.resumeLink(handle: 0x0040)], after: acl(credits: 7, [0x0040: 1])),
        Row(name: "more completed than sent: clamped to those in flight", state: acl(credits: 6, [0x0040: 2]),
            event: .completedPackets(handle: 0x0040, count: 5),
            actions: [.excessCompletedPackets(handle: 0x0040, reported: 5, inFlight: 2), .resumeLink(handle: 0x0040)],
            after: acl(credits: 8, [0x0040: 0])),
        Row(name: "completed packets for a handle with no link are ignored", state: acl(credits: 7, [0x0041: 1]),
            event: .completedPackets(handle: 0x0040, count: 4), actions: [], after: acl(credits: 7, [0x0041: 1])),
        Row(name: "the spare buffer coming back resumes every link", state: acl(count: 4, credits: 1, [0x0040: 3]),
            event: .completedPackets(handle: 0x0040, count: 1), actions: [.resumeLink(handle: 0x0040), .resumeAllLinks],
            after: acl(count: 4, credits: 2, [0x0040: 2])),
        Row(name: "a disconnect with packets in flight: the queue fails, the channels end, the buffers come back, the other link resumes",
            state: acl(credits: 3, [0x0040: 4, 0x0041: 1]), event: .linkClosed(handle: 0x0040),
            actions: ended(0x0040, returning: 4) + [.resumeAllLinks], after: acl(credits: 7, [0x0041: 1])),
        Row(name: "the last link's disconnect with nothing in flight: no buffer to report, no link to resume",
            state: acl(credits: 8, [0x0040: 0]), event: .linkClosed(handle: 0x0040),
            actions: ended(0x0040, returning: 0), after: acl(credits: 8, [:])),
        Row(name: "a second disconnect of the same handle frees nothing", state: acl(credits: 7, [0x0041: 1]),
            event: .linkClosed(handle: 0x0040), actions: [], after: acl(credits: 7, [0x0041: 1])),
        Row(name: "a handle reused before its disconnect ends the old link and frees its buffers", state: acl(credits: 6, [0x0040: 2]),
            event: .linkOpened(handle: 0x0040), actions: ended(0x0040, returning: 2), after: acl(credits: 8, [0x0040: 0])),
        Row(name: "a hardware error ends every link, by handle, and frees every buffer", state: acl(credits: 2, [0x0040: 4, 0x0041: 2]),
            event: .controllerCleared, actions: ended(0x0040, returning: 4) + ended(0x0041, returning: 2), after: acl(credits: 8, [:])),
    ]

    /// The host's side of a link's end, in order: its queue fails, its channels end, and the
    /// buffers its packets held in the controller are reported back when there were any.
    static func ended(_ handle: UInt16, returning count: Int) -> [Flow.Action] {
        [.failQueuedPDUs(handle: handle), .endChannels(handle: handle)] + (count > 0 ? [.creditsReturned(handle: handle, count: count)] : [])
    }

    /// A flow with LE ACL buffers of 27 bytes, `count` of them, `credits` free.
    static func acl(count: Int = 8, credits: Int, _ inFlight: [UInt16: Int]) -> Flow {
        Flow(aclPacketLength: 27, aclPacketCount: count, aclCredits: credits, inFlight: inFlight)
    }

    @Test(arguments: commandRows + aclRows) func row(_ row: Row) {
        var flow = row.state
        let actions = flow.handle(row.event)
        #expect(actions == row.actions)
        #expect(flow == row.after)
    }

    /// (state, handle) -> may a fragment of `handle` go now.
    static let sendRows: [(String, Flow, UInt16, Bool)] = [
        ("no free buffer", acl(credits: 0, [0x0040: 0]), 0x0040, false),
        ("a link without an open link", acl(credits: 8, [0x0040: 0]), 0x0041, false),
        ("below its share of 4 (8 buffers, 2 links)", acl(credits: 5, [0x0040: 3, 0x0041: 0]), 0x0040, true),
        ("at its share of 4", acl(credits: 4, [0x0040: 4, 0x0041: 0]), 0x0040, false),
        ("the last buffer is not for a link with packets in flight", acl(credits: 1, [0x0040: 1, 0x0041: 0]), 0x0040, false),
        ("the last buffer is for a link with none in flight", acl(credits: 1, [0x0040: 1, 0x0041: 0]), 0x0041, true),
        ("one buffer, one link: its share is 1", acl(count: 1, credits: 1, [0x0040: 0]), 0x0040, true),
    ]

    @Test(arguments: 0..<7) func maySend(_ index: Int) {
        let (name, flow, handle, expected) = Self.sendRows[index]
        #expect(flow.maySendACL(on: handle) == expected, "\(name)")
    }

    /// Number Of Completed Packets in the layout of 7.7.19 (event code 0x13, Num_Handles 2,
    /// then each Connection_Handle with its Num_Completed_Packets: 0x0040 two, 0x0041 one),
    /// decoded and fed entry by entry.
    @Test func completedPacketsEvent() throws {
        let event = try HCIEvent(HCIEventPacket(code: 0x13, parameters: [0x02, 0x40, 0x00, 0x02, 0x00, 0x41, 0x00, 0x01, 0x00]))
        guard case .numberOfCompletedPackets(let entries) = event else {
            Issue.record("decoded as \(event)")
            return
        }
        var flow = Self.acl(credits: 4, [0x0040: 3, 0x0041: 1])
        var actions: [Flow.Action] = []
        for entry in entries { actions += flow.handle(.completedPackets(handle: entry.handle, count: Int(entry.count))) }
        #expect(flow == Self.acl(credits: 7, [0x0040: 1, 0x0041: 0]))
        #expect(actions == [.resumeLink(handle: 0x0040), .resumeLink(handle: 0x0041)])
    }

    /// A row whose event is an HCI event packet as Vol 4, Part E lays it out (event code,
    /// Parameter_Total_Length, parameters), decoded and fed as `HCIHost` feeds it.
    struct PacketRow: Sendable, CustomTestStringConvertible {
        let name: String
        let state: Flow
        let packet: [UInt8]
        let actions: [Flow.Action]
        let after: Flow
        var testDescription: String { name }
    }

    static let packetRows: [PacketRow] = [
        // 7.7.19: Num_Handles 1, Connection_Handle 0x0040, Num_Completed_Packets 2.
        PacketRow(name: "Number Of Completed Packets 13 05 01 40 00 02 00: two of 0x0040's three come back",
                  state: acl(credits: 4, [0x0040: 3, 0x0041: 1]), packet: [0x13, 0x05, 0x01, 0x40, 0x00, 0x02, 0x00],
                  actions: [.resumeLink(handle: 0x0040)], after: acl(credits: 6, [0x0040: 1, 0x0041: 1])),
        // 7.7.5: Status 0x00, Connection_Handle 0x0040, Reason 0x13 (Remote User Terminated Connection).
        PacketRow(name: "Disconnection Complete 05 04 00 40 00 13 with three in flight: the link ends, its three buffers come back",
                  state: acl(credits: 4, [0x0040: 3, 0x0041: 1]), packet: [0x05, 0x04, 0x00, 0x40, 0x00, 0x13],
                  actions: ended(0x0040, returning: 3) + [.resumeAllLinks], after: acl(credits: 7, [0x0041: 1])),
        // Reason 0x08 (Connection Timeout): the peer went silent with nothing outstanding.
        PacketRow(name: "Disconnection Complete 05 04 00 40 00 08 of the only link, nothing in flight",
                  state: acl(credits: 8, [0x0040: 0]), packet: [0x05, 0x04, 0x00, 0x40, 0x00, 0x08],
                  actions: ended(0x0040, returning: 0), after: acl(credits: 8, [:])),
        // Status 0x0C (Command Disallowed): the disconnection failed, the link is up (7.7.5).
        PacketRow(name: "Disconnection Complete 05 04 0C 40 00 16 with an error status ends nothing",
                  state: acl(credits: 5, [0x0040: 3]), packet: [0x05, 0x04, 0x0C, 0x40, 0x00, 0x16],
                  actions: [], after: acl(credits: 5, [0x0040: 3])),
        PacketRow(name: "Disconnection Complete 05 04 00 41 00 13 for a handle without a link ends nothing",
                  state: acl(credits: 7, [0x0040: 1]), packet: [0x05, 0x04, 0x00, 0x41, 0x00, 0x13],
                  actions: [], after: acl(credits: 7, [0x0040: 1])),
        PacketRow(name: "Number Of Completed Packets 13 05 01 40 00 02 00 after 0x0040's Disconnection Complete credits nothing",
                  state: acl(credits: 8, [0x0041: 0]), packet: [0x13, 0x05, 0x01, 0x40, 0x00, 0x02, 0x00],
                  actions: [], after: acl(credits: 8, [0x0041: 0])),
    ]

    @Test(arguments: packetRows) func packetRow(_ row: PacketRow) throws {
        var flow = row.state
        var actions: [Flow.Action] = []
        for event in try Self.flowEvents(row.packet) { actions += flow.handle(event) }
        #expect(actions == row.actions)
        #expect(flow == row.after)
    }

    /// What an event packet gives the flow control: each entry of Number Of Completed Packets,
    /// and a Disconnection Complete whose Status is 0x00 (any other Status means the link is
    /// up, 7.7.5).
    static func flowEvents(_ packet: [UInt8]) throws -> [Flow.Event] {
        guard case .event(let raw) = try HCIPacket(type: .event, body: packet) else { return [] }
        switch try HCIEvent(raw) {
        case .numberOfCompletedPackets(let entries):
            return entries.map { .completedPackets(handle: $0.handle, count: Int($0.count)) }
        case .disconnectionComplete(let e):
            return e.status == .success ? [.linkClosed(handle: e.handle)] : []
        default:
            return []
        }
    }
}
