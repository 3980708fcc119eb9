/// Back-pressure of a link's send queue for senders that wait for room instead of failing
/// with `LinkError.queueFull` (LE credit-based channels, whose K-frames must never be
/// dropped: a missing one breaks the SDU at the peer), and the removal of one channel's PDUs.
extension HCIHost {
    /// True when a PDU of `bytes` bytes (basic header included) fits in the link's queue now:
    /// below its PDU bound and within its byte bound, or the queue is empty (an empty queue
    /// takes a PDU of any size).
    func linkQueueHasRoom(_ link: Link, bytes: Int) -> Bool {
        !link.hasQueued
            || (link.queuedPDUs < safeguards.linkQueuePDULimit && link.queuedBytes + bytes <= safeguards.linkQueueLimit)
    }

    /// Queues one K-frame of a credit-based channel, a whole L2CAP PDU with its basic header,
    /// when the link's queue has room for it (`linkQueueHasRoom`); false, with nothing queued,
    /// when it has not: the channel keeps the K-frame and waits (`whenLinkQueueHasRoom`). True
    /// for a link that is gone or a transport that was lost, whose channels are ending (the
    /// K-frame goes nowhere). `now` dates the K-frame for the send timeout. One entry per
    /// K-frame, with no dictionary lookup: the per-K-frame path of `CreditBasedChannel`.
    func enqueueKFrame(_ pdu: [UInt8], handle: UInt16, channelID: UInt16, now: ContinuousClock.Instant) -> Bool {
        guard let link = inlet.link(handle) else { return true }
        guard linkQueueHasRoom(link, bytes: pdu.count) else { return false }
        guard lostReason == nil else { return true }
        enqueuePDU(pdu, link: link, channelID: channelID, deadline: now + safeguards.sendTimeout)
        return true
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
