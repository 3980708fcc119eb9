import Synchronization

/// The reading side of a `CreditBasedChannel` (Core Spec 5.4 Vol 3, Part A, 10.1): the SDUs
/// its one reader took from the channel in its last hop, handed out one by one without
/// synchronising, and the K-frames of those it handed out, reported back to the channel in
/// batches so that their credits go back to the peer.
///
/// Why a batch: `receive` from an application's task used to cost a hop onto the adapter
/// executor and back per SDU (about 6 µs of CPU for a 23-byte SDU); now a hop takes every SDU
/// waiting, and the credits of what the reader took ride on its next hop, or on one job per
/// quarter of the receive window (at once while the peer has no credit left). Credits still
/// go back only for SDUs the application took, so what waits on this side stays bounded by
/// the credits granted.
///
/// `batch`, `index` and `consumed` belong to the one reader, which `busy` enforces; the
/// atomics are set by the channel on the adapter queue.
final class SDUReader: @unchecked Sendable { // the plain fields belong to the one reader (`busy` guards them); the rest are atomics
    typealias Entry = (sdu: [UInt8], frames: Int)
    @exclusivity(unchecked) private var batch: [Entry] = []
    @exclusivity(unchecked) private var index = 0
    /// K-frames of the SDUs handed out and not reported to the channel yet.
    @exclusivity(unchecked) private var consumed = 0
    /// Report the K-frames handed out once this many wait (a quarter of the receive window).
    let reportEvery: Int
    /// One reader at a time.
    let busy = Atomic<Bool>(false)
    /// Set by the channel while the peer holds no credit: every SDU handed out is reported at once.
    let starved = Atomic<Bool>(false)
    /// Set by the channel when a close drops what was received: the batch in hand goes too.
    let discarded = Atomic<Bool>(false)

    init(receiveWindow: Int) {
        reportEvery = max(1, receiveWindow / 4)
    }

    /// The next SDU of the batch in hand, or nil when it is used up; `report` is called with
    /// the K-frames to credit when they are due.
    @inline(__always)
    func next(report: (Int) -> Void) -> [UInt8]? {
        guard index < batch.count else { return nil }
        if discarded.load(ordering: .relaxed) {
            batch.removeAll()
            index = 0
            return nil
        }
        let sdu = take(index, report: report)
        index += 1
        return sdu
    }

    /// The batch is used up: its emptied array (to be reused) and the K-frames not reported yet.
    func drain() -> (drained: [Entry], consumed: Int) {
        batch.removeAll(keepingCapacity: true)
        index = 0
        let drained = batch
        batch = []
        let n = consumed
        consumed = 0
        return (drained, n)
    }

    /// A new batch from the channel (not empty); returns its first SDU.
    func start(_ entries: [Entry], report: (Int) -> Void) -> [UInt8] {
        batch = entries
        index = 1
        return take(0, report: report)
    }

    /// Moves SDU `i` out of the batch (its memory goes with the caller) and counts its
    /// K-frames, reporting them when due.
    @inline(__always)
    private func take(_ i: Int, report: (Int) -> Void) -> [UInt8] {
        let sdu = batch[i].sdu
        batch[i].sdu = []
        consumed += batch[i].frames
        if consumed >= reportEvery || starved.load(ordering: .relaxed) {
            report(consumed)
            consumed = 0
        }
        return sdu
    }
}
