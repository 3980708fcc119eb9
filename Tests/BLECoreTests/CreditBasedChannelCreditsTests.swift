import Testing
import BLECore
import BLEWire

/// `CreditBasedChannelCredits` from tables: (state, event) -> (actions, state). The rules are
/// Core Spec Vol 3, Part A, 10.1: a K-frame uses one credit; a K-frame received while the peer
/// holds no credit, or a Flow Control Credit Indication (4.24) that takes the count past
/// 65535, disconnects the channel.
@Suite struct CreditBasedChannelCreditsTests {
    typealias Credits = CreditBasedChannelCredits

    /// The counts a row checks.
    struct Counts: Equatable, Sendable, CustomStringConvertible {
        var send: Int, receive: Int, unreturned: Int, partial: Int, starved: Bool
        init(_ c: Credits) {
            (send, receive, unreturned, partial, starved) = (c.flow.sendCredits, c.flow.receiveCredits, c.unreturned, c.partialReturned, c.peerStarved)
        }
        init(send: Int, receive: Int, unreturned: Int = 0, partial: Int = 0, starved: Bool = false) {
            (self.send, self.receive, self.unreturned, self.partial, self.starved) = (send, receive, unreturned, partial, starved)
        }
        var description: String { "send \(send) receive \(receive) unreturned \(unreturned) partial \(partial) starved \(starved)" }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        /// The channel's credits at the start: peer credits, window, then these events.
        let peerCredits: Int, window: Int, before: [Credits.Event]
        let event: Credits.Event
        let actions: [Credits.Action]
        let after: Counts
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a credit indication opens sending", peerCredits: 0, window: 8, before: [], event: .peerGranted(2),
            actions: [.sendKFrames], after: Counts(send: 2, receive: 8)),
        Row(name: "credits up to 65535 are taken", peerCredits: 65534, window: 8, before: [], event: .peerGranted(1),
            actions: [.sendKFrames], after: Counts(send: 65535, receive: 8)),
        Row(name: "credits past 65535 close the channel", peerCredits: 65535, window: 8, before: [], event: .peerGranted(1),
            actions: [.close(.creditOverflow(credits: 65536))], after: Counts(send: 65535, receive: 8)),
        Row(name: "a K-frame sent uses a credit", peerCredits: 3, window: 8, before: [], event: .kFrameSent,
            actions: [], after: Counts(send: 2, receive: 8)),
        Row(name: "a K-frame received uses one of the peer's credits", peerCredits: 0, window: 8, before: [], event: .kFrameReceived,
            actions: [], after: Counts(send: 0, receive: 7)),
        Row(name: "the peer's last credit used: it is starved", peerCredits: 0, window: 1, before: [], event: .kFrameReceived,
            actions: [.peerStarved(true)], after: Counts(send: 0, receive: 0, starved: true)),
        Row(name: "a K-frame without a credit closes the channel", peerCredits: 0, window: 1, before: [.kFrameReceived], event: .kFrameReceived,
            actions: [.close(.noCredit)], after: Counts(send: 0, receive: 0, starved: true)),
        Row(name: "less than a quarter of the window taken: kept", peerCredits: 0, window: 8, before: [.kFrameReceived],
            event: .consumed(frames: 1, all: false), actions: [], after: Counts(send: 0, receive: 7, unreturned: 1)),
        Row(name: "a quarter of the window taken goes back", peerCredits: 0, window: 8, before: [.kFrameReceived, .kFrameReceived],
            event: .consumed(frames: 2, all: false), actions: [.grantCredits(2)], after: Counts(send: 0, receive: 8)),
        Row(name: "a waiting reader returns everything at once", peerCredits: 0, window: 8, before: [.kFrameReceived],
            event: .consumed(frames: 1, all: true), actions: [.grantCredits(1)], after: Counts(send: 0, receive: 8)),
        Row(name: "a starved peer gets a credit back at once", peerCredits: 0, window: 8, before: Array(repeating: .kFrameReceived, count: 8),
            event: .consumed(frames: 1, all: false), actions: [.peerStarved(false), .grantCredits(1)], after: Counts(send: 0, receive: 1)),
        Row(name: "an awaited partial SDU counts its K-frames once", peerCredits: 0, window: 8,
            before: [.kFrameReceived, .kFrameReceived, .kFrameReceived, .partialKFrameConsumed],
            event: .partialSDUAwaited(framesInSDU: 3), actions: [], after: Counts(send: 0, receive: 5, unreturned: 3, partial: 3)),
        Row(name: "a partial K-frame consumed with a window of 4 goes back at once", peerCredits: 0, window: 4, before: [.kFrameReceived],
            event: .partialKFrameConsumed, actions: [.grantCredits(1)], after: Counts(send: 0, receive: 4, partial: 1)),
        Row(name: "nothing goes back after the channel ended", peerCredits: 0, window: 8, before: [.kFrameReceived, .ended],
            event: .consumed(frames: 1, all: true), actions: [], after: Counts(send: 0, receive: 7, unreturned: 1)),
        Row(name: "the peer never holds more than 65535", peerCredits: 0, window: 65535, before: [],
            event: .consumed(frames: 10, all: true), actions: [], after: Counts(send: 0, receive: 65535)),
    ]

    @Test(arguments: rows) func row(_ row: Row) {
        var credits = Credits(peerCredits: row.peerCredits, receiveWindow: row.window)
        for event in row.before { _ = credits.handle(event) }
        let actions = credits.handle(row.event)
        #expect(actions == row.actions)
        #expect(Counts(credits) == row.after)
    }

    /// An SDU of 3 K-frames whose first 2 were credited back while it was reassembled owes 1;
    /// the next SDU starts owing from zero.
    @Test func sduOwesWhatWasNotCreditedYet() {
        var credits = Credits(peerCredits: 0, receiveWindow: 4)
        for _ in 0..<3 { _ = credits.handle(.kFrameReceived) }
        _ = credits.handle(.partialKFrameConsumed)
        _ = credits.handle(.partialKFrameConsumed)
        #expect(credits.sduReassembled(frames: 3) == 1)
        #expect(credits.partialReturned == 0)
        #expect(credits.sduReassembled(frames: 2) == 2)
    }

    /// Send credits lent to senders off the executor are not the channel's until restored.
    @Test func lentCreditsComeBack() {
        var credits = Credits(peerCredits: 5, receiveWindow: 8)
        #expect(credits.lendSendCredits() == 5)
        #expect(credits.sendCredits == 0)
        credits.restoreSendCredits(3)
        #expect(credits.sendCredits == 3)
    }
}
