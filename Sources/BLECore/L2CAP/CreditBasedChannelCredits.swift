import BLEWire

/// Every credit of one LE or enhanced credit-based channel, as one value (Core Spec Vol 3,
/// Part A, 10.1): the K-frames this side may send (the peer's credits), the K-frames the peer
/// may send (the credits granted to it), and the K-frames taken by the application and not
/// credited back yet. It does no I/O: `CreditBasedChannel` feeds it what happened and carries
/// out the actions (send K-frames, send a Flow Control Credit Indication, close the channel).
/// Send credits lent to senders off the executor live in `SDUWriter` meanwhile
/// (`lendSendCredits` / `restoreSendCredits`): a sender takes them there without a hop.
///
///     var credits = CreditBasedChannelCredits(peerCredits: 4, receiveWindow: 8)
///     for action in credits.handle(.peerGranted(2)) { ... }        // [.sendKFrames]
///     for action in credits.handle(.consumed(frames: 2, all: true)) { ... }  // [.grantCredits(2)]
package struct CreditBasedChannelCredits: Hashable, Sendable {
    /// The send and receive counts (`CreditBasedFlow`).
    package private(set) var flow: CreditBasedFlow
    /// The credits this side grants the peer and keeps topped up.
    package let receiveWindow: Int
    /// K-frames the application took (or the channel credits at once) and not credited back yet.
    package private(set) var unreturned = 0
    /// K-frames of the SDU being reassembled already counted in `unreturned`.
    package private(set) var partialReturned = 0
    /// True while the peer holds no credit (reported once per change).
    package private(set) var peerStarved = false
    /// The channel ended: no credit goes back any more.
    package private(set) var ended = false

    package init(peerCredits: Int, receiveWindow: Int) {
        self.flow = CreditBasedFlow(sendCredits: peerCredits, receiveCredits: receiveWindow)
        self.receiveWindow = receiveWindow
    }

    /// K-frames this side may send now (those lent to `SDUWriter` not included).
    package var sendCredits: Int { flow.sendCredits }

    package enum Event: Hashable, Sendable {
        /// A Flow Control Credit Indication (4.24) from the peer.
        case peerGranted(Int)
        /// A K-frame went to the link: it used one send credit.
        case kFrameSent
        /// A K-frame arrived: it used one of the peer's credits.
        case kFrameReceived
        /// A K-frame of an SDU not complete yet, credited back at once because the
        /// application has taken everything and waits for that SDU.
        case partialKFrameConsumed
        /// The application waits for the SDU being reassembled, which has `framesInSDU`
        /// K-frames so far: they are credited back (an SDU larger than the window still completes).
        case partialSDUAwaited(framesInSDU: Int)
        /// The application took SDUs of `frames` K-frames; `all` returns them at once (the
        /// reader waits for more) instead of in batches of a quarter of the window.
        case consumed(frames: Int, all: Bool)
        /// The channel ended (either side closed it, the link went, or a violation).
        case ended
    }

    package enum Action: Hashable, Sendable {
        /// Send credits came: send the queued K-frames.
        case sendKFrames
        /// Send an L2CAP_FLOW_CONTROL_CREDIT_IND with this many credits.
        case grantCredits(Int)
        /// The peer ran out of credits (true) or got some again.
        case peerStarved(Bool)
        /// The peer broke the credit rules: close the channel (10.1: a credit count past
        /// 65535, a K-frame without a credit).
        case close(KFrameError)
    }

    /// Takes one event; returns what the channel must do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .peerGranted(let credits):
            do throws(KFrameError) {
                try flow.peerGranted(credits)
            } catch {
                return [.close(error)]
            }
            return [.sendKFrames]
        case .kFrameSent:
            _ = flow.takeSendCredit()
            return []
        case .kFrameReceived:
            do throws(KFrameError) {
                try flow.received()
            } catch {
                return [.close(error)]
            }
            guard flow.receiveCredits == 0, !peerStarved else { return [] }
            peerStarved = true
            return [.peerStarved(true)]
        case .partialKFrameConsumed:
            unreturned += 1
            partialReturned += 1
            return returnCredits(all: false)
        case .partialSDUAwaited(let frames):
            unreturned += frames - partialReturned
            partialReturned = frames
            return []
        case .consumed(let frames, let all):
            unreturned += frames
            return returnCredits(all: all)
        case .ended:
            ended = true
            partialReturned = 0
            return []
        }
    }

    /// An SDU of `frames` K-frames completed: the K-frames not credited back yet while it was
    /// being reassembled, which the application's taking it will return.
    package mutating func sduReassembled(frames: Int) -> Int {
        defer { partialReturned = 0 }
        return frames - partialReturned
    }

    /// Takes every send credit, lent to senders off the executor.
    package mutating func lendSendCredits() -> Int { flow.lendSendCredits() }

    /// Send credits that were lent and not used.
    package mutating func restoreSendCredits(_ credits: Int) { flow.restoreSendCredits(credits) }

    /// Grants the peer the credits of what was taken, in batches of a quarter of the window,
    /// or at once when the peer has none left or `all`.
    private mutating func returnCredits(all: Bool) -> [Action] {
        guard !ended, unreturned > 0 else { return [] }
        guard all || unreturned >= max(1, receiveWindow / 4) || flow.receiveCredits == 0 else { return [] }
        let n = flow.grant(unreturned)
        unreturned = 0
        guard n > 0 else { return [] }
        guard peerStarved else { return [.grantCredits(n)] }
        peerStarved = false
        return [.peerStarved(false), .grantCredits(n)]
    }
}
