/// Back-pressure of a link's send queue for senders that wait for room instead of failing
/// with `LinkError.queueFull` (LE credit-based channels, whose K-frames must never be
/// dropped: a missing one breaks the SDU at the peer), and the removal of one channel's PDUs.
extension HCIHost {
    /// The room in the link's queue now (`LinkQueueRoom`); unbounded for a gone link or a
    /// lost transport, whose channels are ending.
    func linkQueueRoom(handle: UInt16) -> LinkQueueRoom {
        guard lostReason == nil, let link = inlet.link(handle) else { return .unbounded }
        return LinkQueueRoom(pdus: safeguards.linkQueuePDULimit - link.queuedPDUs, bytes: safeguards.linkQueueLimit - link.queuedBytes,
                             isEmpty: !link.hasQueued)
    }

    /// Queues K-frames of a credit-based channel, each a whole L2CAP PDU with its basic header,
    /// that `linkQueueRoom` made room for; they go nowhere when the link is gone or the
    /// transport was lost (the channel is ending). One call for all the K-frames a channel
    /// segmented in one turn, dated once for the send timeout.
    func enqueueKFrames(_ pdus: [[UInt8]], handle: UInt16, channelID: UInt16) {
        guard lostReason == nil, let link = inlet.link(handle) else { return }
        let deadline = ClockStamp(scheduler.now() + safeguards.sendTimeout)
        for pdu in pdus { appendPDU(pdu, link: link, channelID: channelID, deadline: deadline) }
        startSending(link)
    }

    /// True while the link's queue is at or below half of both its bounds (or the link is
    /// gone): the room a sender that may wait keeps free for PDUs that cannot (responses,
    /// signaling, SMP). `whenLinkQueueHasRoom` wakes exactly when this turns true again.
    func linkQueueIsHalfEmpty(handle: UInt16) -> Bool {
        guard lostReason == nil, let link = inlet.link(handle) else { return true }
        return link.queuedBytes <= safeguards.linkQueueLimit / 2 && link.queuedPDUs <= safeguards.linkQueuePDULimit / 2
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
