/// Back-pressure of a link's send queue for senders that wait for room instead of failing
/// with `LinkError.queueFull` (LE credit-based channels, whose K-frames must never be
/// dropped: a missing one breaks the SDU at the peer), and the removal of one channel's PDUs.
extension HCIHost {
    /// True when a PDU of `bytes` bytes (basic header included) fits in the link's queue now:
    /// below its PDU bound and within its byte bound, or the queue is empty (an empty queue
    /// takes a PDU of any size); true for a gone link, whose channels are ending.
    func linkQueueHasRoom(handle: UInt16, bytes: Int) -> Bool {
        guard let link = links[handle] else { return true }
        return !link.hasQueued
            || (link.queuedPDUs < safeguards.linkQueuePDULimit && link.queuedBytes + bytes <= safeguards.linkQueueLimit)
    }

    /// Calls `body` once, on the executor, when the link's queue has drained to half its
    /// bounds (or the link is gone): the back-pressure event of senders that found no room.
    func whenLinkQueueHasRoom(handle: UInt16, _ body: @escaping () -> Void) {
        guard let link = links[handle] else { return body() }
        link.roomWaiters.append(body)
    }

    /// Wakes the link's room waiters once its queue has drained to half its byte bound and half
    /// its PDU bound: both, so a waiter never wakes to find the other bound still full. An
    /// empty queue is always below both, so a PDU larger than the whole queue goes once it is.
    func notifyRoom(_ link: Link) {
        guard !link.roomWaiters.isEmpty,
              link.queuedBytes <= safeguards.linkQueueLimit / 2,
              link.queuedPDUs <= safeguards.linkQueuePDULimit / 2 else { return }
        let waiters = link.roomWaiters
        link.roomWaiters = []
        for body in waiters { body() }
    }

    /// Takes every queued fragment of `channelID` out of the link's queue; a waiting sender
    /// fails with `LinkError.sendTimeout`. A PDU whose first fragments went out is cut short:
    /// the peer drops it when the next start fragment arrives (Vol 3, Part A, 7.2).
    func removeQueued(link: Link, channelID: UInt16) {
        guard link.hasQueued else { return }
        var kept: [QueuedFragment] = []
        kept.reserveCapacity(link.queue.count - link.queueHead)
        for entry in link.queue[link.queueHead...] {
            guard entry.channelID == channelID else {
                kept.append(entry)
                continue
            }
            link.queuedBytes -= entry.packet.data.count
            if entry.isLast { link.queuedPDUs -= 1 }
            if let done = entry.done { sendWaiters.resume(done, with: .failure(sendTimeoutError(link: link, channelID: channelID))) }
        }
        link.queue = kept
        link.queueHead = 0
    }
}
