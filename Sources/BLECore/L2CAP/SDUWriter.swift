import Synchronization
import BLEWire

/// One SDU on its way out of a `CreditBasedChannel`: segmented into K-frames as credits allow
/// (Core Spec 5.4 Vol 3, Part A, 3.4.2 and 10.1), each K-frame's PDU built straight from the
/// SDU when it goes out.
final class PendingSDU: @unchecked Sendable { // mutated only on the adapter executor, or by the one sender before `SDUWriter.hand` publishes it
    let sdu: [UInt8]
    // Unchecked exclusivity: one owner at a time (above), and the checks cost per K-frame.
    /// K-frames sent, and the offset in `sdu` where the next one starts.
    @exclusivity(unchecked) var next = 0
    @exclusivity(unchecked) var offset = 0
    /// The peer's MPS the SDU is segmented by, fixed when its first K-frame goes out.
    @exclusivity(unchecked) var mps = 0
    /// The sender waiting for this SDU's credits; nil while it has not waited.
    @exclusivity(unchecked) var waiter: Waiters<Void, L2CAPChannelError>.ID?
    /// Credits the sender took off the executor (`SDUWriter`), and the next SDU it pushed.
    @exclusivity(unchecked) var prepaid = 0
    @exclusivity(unchecked) var pushedAfter: Unmanaged<PendingSDU>?

    init(_ sdu: [UInt8]) { self.sdu = sdu }

    var isStarted: Bool { next > 0 }
    var isSent: Bool { next > 0 && offset == sdu.count }
}

/// The sending side of a `CreditBasedChannel` for senders off its executor: the channel lends
/// it the send credits it holds while nothing waits in its queue, and a send that finds the
/// credits for its whole SDU takes them and hands the SDU over without a hop. The channel
/// takes what was handed over in one job (`pushed` returns true for the first SDU after it
/// last looked), queues it in order and takes back the credits nobody took before it uses
/// any credit itself, so a credit is always in one place: the channel, this writer, or an SDU.
///
/// Why: a send from an application's task used to hop onto the adapter executor and back per
/// SDU; a burst of small SDUs with credit now costs one job on the executor.
final class SDUWriter: Sendable {
    /// Credits lent by the channel and not taken.
    let credits = Atomic<Int>(0)
    /// The peer's MTU and MPS (a reconfiguration changes them on the executor).
    let peerMTU: Atomic<Int>
    let peerMPS: Atomic<Int>
    /// SDUs handed over and not taken by the channel yet, newest first (a lock-free stack);
    /// `closedMark` once the channel stopped taking SDUs (`close`).
    private let pushed = Atomic<Unmanaged<PendingSDU>?>(nil)
    /// The top of `pushed` once the channel is closing or ended: a hand-over that meets it
    /// fails (the send goes to the channel, which throws), so no SDU is accepted after it.
    private static let closedMark = Unmanaged.passRetained(PendingSDU([]))

    init(peerMTU: Int, peerMPS: Int) {
        self.peerMTU = Atomic(peerMTU)
        self.peerMPS = Atomic(peerMPS)
    }

    deinit {
        var next = pushed.exchange(nil, ordering: .acquiring)
        if next?.toOpaque() == Self.closedMark.toOpaque() { next = nil }
        while let n = next {
            next = n.takeUnretainedValue().pushedAfter
            n.release()
        }
    }

    /// True once `close` ran.
    var isClosed: Bool { pushed.load(ordering: .relaxed)?.toOpaque() == Self.closedMark.toOpaque() }

    /// Takes the credits for `sdu` and hands it over; nil when the channel must take it (too
    /// large, too few credits lent, the channel closing or ended). Else true for the first SDU
    /// after the channel last took them: the caller then schedules the channel's `takeWriterSDUs`.
    func hand(_ sdu: [UInt8]) -> Bool? {
        guard !isClosed, sdu.count <= peerMTU.load(ordering: .relaxed) else { return nil }
        let frames = KFrameSegmenter.frameCount(sduSize: sdu.count, mps: peerMPS.load(ordering: .relaxed))
        var lent = credits.load(ordering: .relaxed)
        while true {
            guard lent >= frames else { return nil }
            let (taken, current) = credits.compareExchange(expected: lent, desired: lent - frames, ordering: .relaxed)
            if taken { break }
            lent = current
        }
        let pending = PendingSDU(sdu)
        pending.prepaid = frames
        let node = Unmanaged.passRetained(pending)
        var head = pushed.load(ordering: .relaxed)
        while true {
            // Closed after the check above: the SDU is not accepted; the caller's send throws.
            if head?.toOpaque() == Self.closedMark.toOpaque() {
                node.release()
                credits.add(frames, ordering: .relaxed)
                return nil
            }
            pending.pushedAfter = head
            let (stored, current) = pushed.compareExchange(expected: head, desired: node, successOrdering: .releasing, failureOrdering: .relaxed)
            if stored { return head == nil }
            head = current
        }
    }

    /// Every SDU handed over since the last call, oldest first (on the executor).
    func take(_ body: (PendingSDU) -> Void) {
        var head = pushed.load(ordering: .relaxed)
        while true {
            guard let top = head, top.toOpaque() != Self.closedMark.toOpaque() else { return }
            let (taken, current) = pushed.compareExchange(expected: top, desired: nil, successOrdering: .acquiring, failureOrdering: .relaxed)
            if taken { break }
            head = current
        }
        deliver(head, body)
    }

    /// Stops accepting SDUs: every one handed over before goes to `body`, oldest first, and
    /// every hand-over from now on fails (on the executor).
    func close(_ body: (PendingSDU) -> Void) {
        let head = pushed.exchange(Self.closedMark, ordering: .acquiring)
        guard head?.toOpaque() != Self.closedMark.toOpaque() else { return }
        deliver(head, body)
    }

    /// Hands a newest-first chain to `body` oldest first (the chain's retain goes with each).
    private func deliver(_ chain: Unmanaged<PendingSDU>?, _ body: (PendingSDU) -> Void) {
        guard var head = chain else { return }
        // Reverse the newest-first chain, then hand each over (the chain's retain goes with it).
        var reversed: Unmanaged<PendingSDU>?
        while true {
            let node = head.takeUnretainedValue()
            let after = node.pushedAfter
            node.pushedAfter = reversed
            reversed = head
            guard let after else { break }
            head = after
        }
        while let n = reversed {
            let node = n.takeRetainedValue()
            reversed = node.pushedAfter
            node.pushedAfter = nil
            body(node)
        }
    }
}
