import BLEWire

/// The host's side of a link's end (Core Spec Vol 4, Part E, 4.3 and 7.7.5): a Disconnection
/// Complete with Status 0x00, a Hardware Error or HCI_Reset, the transport's loss, or a handle
/// reused before its Disconnection Complete. `HCIFlowControl` decides what ends and in which
/// order (`failQueuedPDUs`, `endChannels`, `creditsReturned`); the functions here carry it out
/// on the `Link` the host took out of its tables before feeding the event.
extension HCIHost {
    /// A link the host ended, and the error its pending work fails with.
    struct EndingLink {
        let link: Link
        let error: LinkError
    }

    /// Disconnection Complete with Status 0x00 for `handle`.
    func linkDisconnected(handle: UInt16, reason: HCIStatus) {
        safeguards.foreignHandles.remove(handle)
        guard let link = links[handle] else { return }
        linkLost(handle: handle, error: .disconnected(peer: link.peer.address, reason: reason))
    }

    /// Ends the link on `handle` (if any) with `error`.
    func linkLost(handle: UInt16, error: LinkError) {
        guard let link = links.removeValue(forKey: handle) else { return }
        apply(flow.handle(.linkClosed(handle: handle)), ending: [handle: EndingLink(link: link, error: error)])
        pumpACL()
    }

    /// Every link ends with the error `error(link)` gives, and every buffer is free
    /// (`HCIFlowControl.Event.controllerCleared`).
    func allLinksLost(_ error: (Link) -> LinkError) {
        let ending = links.mapValues { EndingLink(link: $0, error: error($0)) }
        links.removeAll()
        readyLinks.removeAll()
        apply(flow.handle(.controllerCleared), ending: ending)
    }

    /// `HCIFlowControl.Action.failQueuedPDUs`: the link leaves the round-robin, its send timer
    /// stops, and every PDU it queued fails with the link's error.
    func failQueuedPDUs(_ ending: EndingLink) {
        let link = ending.link
        readyLinks.removeAll { $0 == link.handle }
        link.isReady = false
        link.sendDeadline?.cancel()
        link.sendDeadline = nil
        for entry in link.queue[link.queueHead...] {
            if let done = entry.done { sendWaiters.resume(done, with: .failure(ending.error)) }
        }
        link.queue.removeAll()
        link.queueHead = 0
        link.queuedBytes = 0
        link.queuedPDUs = 0
    }

    /// `HCIFlowControl.Action.endChannels`: a partial inbound PDU is dropped, the fixed and
    /// credit-based channels end with the link's error, so do its Connection Parameter Update
    /// exchanges; the senders waiting for room in its queue wake (the link is gone:
    /// `whenLinkQueueHasRoom`) and find none needed.
    func endChannels(_ ending: EndingLink) {
        let link = ending.link
        if let why = link.reassembler.discardPartial() { partialPDUDiscarded(link, "link closed while \(why)") }
        for channel in link.channels.values { channel.closed(ending.error) }
        creditBasedLinkLost(link, error: ending.error)
        parameterUpdateLinkLost(link)
        parameterRequestLinkLost(link, error: ending.error)
        link.channels.removeAll()
        link.att = nil
        link.attRawReceiver = nil
        let waiters = link.roomWaiters
        link.roomWaiters = []
        for body in waiters { body() }
    }
}
