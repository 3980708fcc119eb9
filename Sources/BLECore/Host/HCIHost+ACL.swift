import BLEWire

/// ACL data: credits, fair scheduling across links, fragmentation and reassembly
/// (Core Spec Vol 4, Part E, 4.1 and 5.4.2).
///
/// One peer that stops acknowledging (its Number Of Completed Packets never come) cannot take
/// the controller from the others: a link holds at most its share of the controller's
/// buffers (`HCIFlowControl.linkShare`), a PDU that finds no buffer within `aclSendTimeout` fails with
/// `LinkError.sendTimeout`, and a link's queue holds at most `aclLinkQueueLimit` bytes and
/// `aclLinkQueuePDULimit` PDUs (`LinkError.queueFull` beyond).
extension HCIHost {
    /// One fragment waiting for a controller buffer; the last fragment of a PDU carries its waiter.
    struct QueuedFragment {
        let packet: ACLDataPacket
        let channelID: UInt16
        let done: Waiters<Void, LinkError>.ID?
        /// The last fragment of its PDU: the PDU leaves the queue with it.
        let isLast: Bool
        /// When the PDU fails with `sendTimeout` if still here (the same for all its fragments).
        let deadline: ClockStamp
    }

    /// Per-connection state kept by the host.
    final class Link {
        let handle: UInt16
        let peer: LEAddress
        // Unchecked: a Link is touched only by its host, on the adapter executor.
        @exclusivity(unchecked) var reassembler = ACLReassembler()
        /// Fragments waiting for a controller buffer.
        @exclusivity(unchecked) var queue: [QueuedFragment] = []
        @exclusivity(unchecked) var queueHead = 0
        /// Bytes of ACL data in `queue[queueHead...]`.
        @exclusivity(unchecked) var queuedBytes = 0
        /// PDUs with their last fragment in `queue[queueHead...]`.
        @exclusivity(unchecked) var queuedPDUs = 0
        /// Called once when the queue frees room (`whenLinkQueueHasRoom`).
        @exclusivity(unchecked) var roomWaiters: [() -> Void] = []
        /// In `readyLinks`: has queued fragments and is below its share.
        @exclusivity(unchecked) var isReady = false
        /// Fires at the deadline of the oldest queued fragment.
        @exclusivity(unchecked) var sendDeadline: (any ScheduledTimer)?
        var channels: [UInt16: FixedChannel] = [:]
        /// LE credit-based channels (HCIHost+CreditBasedChannels.swift).
        let creditBased = CreditBasedLinkState()
        /// `channels[0x0004]`, looked up on every inbound PDU.
        @exclusivity(unchecked) var att: FixedChannel?
        /// The ATT channel's raw receiver (`FixedChannel.setRawReceiver`), for the inlet.
        @exclusivity(unchecked) var attRawReceiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
        /// The largest ATT PDU the link accepts: its bearer's ATT_MTU once it set it
        /// (`FixedChannel.limitInboundSDUs`). Read by the inlet for every ATT PDU.
        @exclusivity(unchecked) var attMaximumPDU = L2CAPInboundLimits.attDefault
        /// Connection Parameter Update Requests being applied (HCIHost+L2CAP.swift).
        var parameterUpdate = ParameterUpdateState.idle

        init(handle: UInt16, peer: LEAddress) {
            self.handle = handle
            self.peer = peer
        }

        var hasQueued: Bool { queueHead < queue.count }
    }

    /// Sets the controller's LE ACL buffer geometry (from LE Read Buffer Size) and its credits.
    public func setACLBuffers(packetLength: Int, packetCount: Int) {
        apply(flow.handle(.bufferSizeRead(packetLength: packetLength, packetCount: packetCount)))
    }

    /// Registers a new connection so its data can flow. The central calls this on LE
    /// Connection Complete, before any data for the handle can arrive.
    public func addLink(handle: UInt16, peer: LEAddress) {
        safeguards.foreignHandles.remove(handle & 0x0FFF)
        // A link still on this handle (its Disconnection Complete never came) ends first.
        let old = links.removeValue(forKey: handle)
        let ending = old.map { [handle: EndingLink(link: $0, error: .closed(peer: $0.peer.address, handle: handle))] } ?? [:]
        apply(flow.handle(.linkOpened(handle: handle)), ending: ending)
        links[handle] = Link(handle: handle, peer: peer)
        if old != nil { pumpACL() }
    }

    public func hasLink(_ handle: UInt16) -> Bool { links[handle] != nil }

    /// The fixed channel `channelID` of a link (ATT is 0x0004), created on first use.
    public func fixedChannel(handle: UInt16, channelID: UInt16) -> FixedChannel? {
        guard let link = links[handle] else { return nil }
        if let c = link.channels[channelID] { return c }
        let c = FixedChannel(host: self, handle: handle, channelID: channelID, peer: link.peer)
        link.channels[channelID] = c
        if channelID == L2CAPChannelID.att { link.att = c }
        return c
    }

    /// Installs the raw receiver of a link's ATT channel (see `ACLInlet.deliverRawPDU`).
    nonisolated func setATTRawReceiver(handle: UInt16, _ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        inlet.link(handle)?.attRawReceiver = receiver
    }

    /// Sends one L2CAP basic-mode PDU; returns once its last fragment was handed to the
    /// controller. A cancelled caller returns at once with `LinkError.cancelled`; fragments
    /// already queued still go out (a PDU is never cut short on the link). A PDU that finds no
    /// controller buffer within `aclSendTimeout` fails with `LinkError.sendTimeout`; one that
    /// would take the link's queue past `aclLinkQueueLimit` bytes or `aclLinkQueuePDULimit`
    /// PDUs fails at once with `LinkError.queueFull`.
    public func sendL2CAP(handle: UInt16, channelID: UInt16, payload: [UInt8]) async throws(LinkError) {
        if let lostReason { throw .transportLost(lostReason) }
        guard let link = links[handle] else { throw .closed(peer: nil, handle: handle) }
        if let full = queueFullError(link: link, channelID: channelID, payloadCount: payload.count) { throw full }
        // The error is only built when needed: this is the path of every Write Command.
        let peer = link.peer.address
        let result = await sendWaiters.wait(cancelled: { _ in .failure(.cancelled(peer: peer, handle: handle, channelID: channelID)) }) { id in
            enqueue(link: link, channelID: channelID, payload: payload, done: id)
        }
        try result.get()
    }

    /// `LinkError.queueFull` when a PDU of `payloadCount` bytes does not fit in the link's
    /// queue: it holds as many PDUs as allowed, or the PDU would take it past its byte bound.
    func queueFullError(link: Link, channelID: UInt16, payloadCount: Int) -> LinkError? {
        let bound: LinkQueueBound
        if link.queuedPDUs >= safeguards.linkQueuePDULimit {
            bound = .pdus(queued: link.queuedPDUs, limit: safeguards.linkQueuePDULimit)
        } else if link.queuedBytes > 0, link.queuedBytes + payloadCount + 4 > safeguards.linkQueueLimit {
            bound = .bytes(queued: link.queuedBytes, limit: safeguards.linkQueueLimit)
        } else {
            return nil
        }
        safeguards.queueOverflows += 1
        return .queueFull(peer: link.peer.address, handle: link.handle, channelID: channelID, bound: bound)
    }

    /// Queues a PDU without waiting when the link still exists.
    func enqueueIfLinked(handle: UInt16, channelID: UInt16, payload: [UInt8]) {
        guard lostReason == nil, let link = links[handle] else { return }
        enqueue(link: link, channelID: channelID, payload: payload)
    }

    /// Appends a whole L2CAP PDU, basic header included (a K-frame built in place), to the
    /// link's queue (`enqueueKFrames`); one that fits a controller buffer is not copied.
    func appendPDU(_ pdu: [UInt8], link: Link, channelID: UInt16, deadline: ClockStamp) {
        if pdu.count <= aclPacketLength {
            append(ACLDataPacket(handle: link.handle, boundary: .firstNonFlushable, data: pdu), to: link, channelID: channelID, done: nil,
                   isLast: true, deadline: deadline)
        } else {
            let fragments = ACLFragmenter.fragments(handle: link.handle, pdu: pdu, fragmentSize: aclPacketLength)
            for (i, f) in fragments.enumerated() {
                append(f, to: link, channelID: channelID, done: nil, isLast: i == fragments.count - 1, deadline: deadline)
            }
        }
        link.queuedPDUs += 1
    }

    /// Queues a PDU (the host's own signaling and SMP answers without a waiter). Without a
    /// waiter, a PDU that does not fit in the link's queue is dropped and logged.
    func enqueue(link: Link, channelID: UInt16, payload: [UInt8], done: Waiters<Void, LinkError>.ID? = nil) {
        if done == nil, dropsWhenFull(link: link, channelID: channelID, payloadCount: payload.count) { return }
        let fragments = ACLFragmenter.fragments(handle: link.handle, channelID: channelID, payload: payload, fragmentSize: aclPacketLength)
        let deadline = ClockStamp(scheduler.now() + safeguards.sendTimeout)
        for (i, f) in fragments.enumerated() {
            let isLast = i == fragments.count - 1
            append(f, to: link, channelID: channelID, done: isLast ? done : nil, isLast: isLast, deadline: deadline)
        }
        link.queuedPDUs += 1
        startSending(link)
    }

    /// True (and logged) when a PDU of `payloadCount` bytes without a waiter does not fit in the link's queue.
    func dropsWhenFull(link: Link, channelID: UInt16, payloadCount: Int) -> Bool {
        guard let full = queueFullError(link: link, channelID: channelID, payloadCount: payloadCount) else { return false }
        logLimited(.queueFull, .warning, "\(full); dropping a \(payloadCount)-byte PDU on channel \(channelID.hex)")
        return true
    }

    func append(_ fragment: ACLDataPacket, to link: Link, channelID: UInt16, done: Waiters<Void, LinkError>.ID?, isLast: Bool,
                deadline: ClockStamp) {
        link.queue.append(QueuedFragment(packet: fragment, channelID: channelID, done: done, isLast: isLast, deadline: deadline))
        link.queuedBytes += fragment.data.count
    }

    /// Hands what the link queued to the controller as its buffers allow.
    func startSending(_ link: Link) {
        markReady(link)
        pumpACL()
        if link.hasQueued, link.sendDeadline == nil { armSendDeadline(link) }
    }

    /// Puts a link with queued fragments in the round-robin, unless it is there already.
    func markReady(_ link: Link) {
        guard !link.isReady, link.hasQueued else { return }
        link.isReady = true
        readyLinks.append(link.handle)
    }

    /// Hands queued fragments to the controller while it has buffers, one fragment per link in
    /// turn, so a busy link never starves another. A link at its share, or one with packets in
    /// flight when a single buffer is free (`HCIFlowControl.maySendACL`), leaves the turn until
    /// Number Of Completed Packets brings it below or frees more buffers.
    func pumpACL() {
        guard lostReason == nil else { return }
        var drained: [Link] = []
        defer { for link in drained { notifyRoom(link) } }
        while flow.aclCredits > 0, !readyLinks.isEmpty {
            let handle = readyLinks.removeFirst()
            // The inlet's table (the same links as `links`): no hashing per fragment.
            guard let link = inlet.link(handle) else { continue }
            guard link.hasQueued, flow.maySendACL(on: handle) else {
                link.isReady = false
                continue
            }
            let entry = link.queue[link.queueHead]
            link.queueHead += 1
            link.queuedBytes -= entry.packet.data.count
            if entry.isLast { link.queuedPDUs -= 1 }
            if !link.roomWaiters.isEmpty, !drained.contains(where: { $0 === link }) { drained.append(link) }
            if link.queueHead == link.queue.count {
                link.queue.removeAll(keepingCapacity: true)
                link.queueHead = 0
                link.isReady = false
            } else {
                readyLinks.append(handle)
            }
            do {
                try transport.send(.acl(entry.packet))
            } catch {
                if let done = entry.done { sendWaiters.resume(done, with: .failure(.transportLost("\(error)"))) }
                continue
            }
            _ = flow.handle(.aclSent(handle: handle))
            if let done = entry.done { sendWaiters.resume(done, with: .success(())) }
        }
    }

    /// Arms the link's timer for the deadline of its oldest queued fragment.
    func armSendDeadline(_ link: Link) {
        guard link.hasQueued else { return }
        let handle = link.handle
        let delay = max(.zero, link.queue[link.queueHead].deadline.instant - scheduler.now())
        link.sendDeadline = scheduler.schedule(after: delay) { [weak self] in
            self?.assumeIsolated { $0.sendDeadlinePassed(handle: handle) }
        }
    }

    /// Fails every queued PDU whose deadline passed with `LinkError.sendTimeout`. The rest of
    /// a PDU whose first fragments went out goes too: the peer drops the partial PDU when
    /// the next start fragment arrives (Vol 3, Part A, 7.2). A credit-based channel that lost
    /// K-frames this way ends (`creditBasedKFramesTimedOut`).
    func sendDeadlinePassed(handle: UInt16) {
        guard let link = links[handle] else { return }
        link.sendDeadline = nil
        let now = scheduler.now()
        var failed = 0
        var brokenChannels: [UInt16] = []
        while link.hasQueued, link.queue[link.queueHead].deadline <= ClockStamp(now) {
            let entry = link.queue[link.queueHead]
            link.queueHead += 1
            link.queuedBytes -= entry.packet.data.count
            if entry.isLast { link.queuedPDUs -= 1 }
            if entry.packet.boundary != .continuing { failed += 1 }
            if let done = entry.done {
                sendWaiters.resume(done, with: .failure(sendTimeoutError(link: link, channelID: entry.channelID)))
            } else if Self.leDynamicCIDs.contains(entry.channelID), !brokenChannels.contains(entry.channelID) {
                brokenChannels.append(entry.channelID)
            }
        }
        for cid in brokenChannels { creditBasedKFramesTimedOut(link: link, remoteCID: cid) }
        if !link.hasQueued {
            link.queue.removeAll(keepingCapacity: true)
            link.queueHead = 0
            link.isReady = false
            readyLinks.removeAll { $0 == handle }
        }
        if failed > 0 {
            safeguards.sendTimeouts += failed
            logLimited(.sendTimeout, .warning, "handle \(handle.hex) to \(link.peer.address): \(failed) PDU(s) found no controller buffer within \(safeguards.sendTimeout) (\(flow.inFlight[handle] ?? 0) packets unacknowledged); they failed with a send timeout")
        }
        // A channel that ended above may have queued (and armed the timer for) its
        // Disconnection Request.
        if link.sendDeadline == nil { armSendDeadline(link) }
        notifyRoom(link)
    }

    /// `LinkError.sendTimeout` for a PDU of `channelID` that found no controller buffer in time.
    func sendTimeoutError(link: Link, channelID: UInt16) -> LinkError {
        .sendTimeout(peer: link.peer.address, handle: link.handle, channelID: channelID,
                     milliseconds: Int(safeguards.sendTimeout.nanoseconds / 1_000_000))
    }

    /// Carries out what the flow control asks for. Resuming links only puts them in the
    /// round-robin; the caller pumps (`pumpACL`) once it has taken every event. `ending` holds
    /// the links the event ended (already out of `links`), with the error their work fails with.
    func apply(_ actions: [HCIFlowControl.Action], ending: [UInt16: EndingLink] = [:]) {
        for action in actions {
            switch action {
            case .sendCommands:
                pumpCommands()
            case .resumeLink(let handle):
                if let link = links[handle] { markReady(link) }
            case .resumeAllLinks:
                for link in links.values { markReady(link) }
            case .excessCompletedPackets(let handle, let reported, let inFlight):
                logLimited(.controllerMiscount, .warning, "the controller reported \(reported) completed packets for handle \(handle.hex) with \(inFlight) in flight (Vol 4, Part E, 7.7.19); only \(inFlight) credited")
            case .failQueuedPDUs(let handle):
                if let ended = ending[handle] { failQueuedPDUs(ended) }
            case .endChannels(let handle):
                if let ended = ending[handle] { endChannels(ended) }
            case .creditsReturned(let handle, let count):
                logger.log(.debug, "handle \(handle.hex) ended with \(count) packet(s) in the controller; their buffers are free again (Vol 4, Part E, 4.3)")
            }
        }
    }

    /// Inbound ACL data the inlet left to the host (`ACLInlet.receive` reassembles every
    /// packet and delivers to the fixed channels itself).
    func handleLeftover(_ leftover: ACLInlet.Leftover) {
        switch leftover {
        case .none:
            break
        case .pdu(let link, let cid, let payload):
            routeL2CAP(link: link, channelID: cid, payload: payload)
        case .unknownHandle(let handle, let length):
            if safeguards.foreignHandles.contains(handle & 0x0FFF) {
                logLimited(.foreignHandle, .debug, "ignoring ACL data on handle \(handle.hex), a link of another host on this adapter")
            } else {
                logLimited(.unknownHandle, .warning, "dropping ACL data for unknown handle \(handle.hex) (\(length) bytes)")
            }
        case .dropped(let link, let why):
            safeguards.inboundDrops += 1
            logLimited(.reassembly, .warning, "handle \(link.handle.hex) (\(link.peer.address)): \(why)")
        case .partialDiscarded(let link, let why, let then):
            partialPDUDiscarded(link, why)
            handleLeftover(then)
        case .oversized(let link, let cid, let length, let maximum, let head):
            safeguards.inboundDrops += 1
            safeguards.oversizedPDUs += 1
            logLimited(.reassembly, .warning, "handle \(link.handle.hex) (\(link.peer.address)): dropping a PDU on channel \(cid.hex) of \(length) bytes, more than the \(maximum) the channel accepts; its fragments are discarded unbuffered")
            oversizedPDURefused(link: link, channelID: cid, length: length, head: head)
        }
    }

    /// Counts and logs a partial inbound PDU that reassembly threw away.
    func partialPDUDiscarded(_ link: Link, _ why: String) {
        safeguards.inboundDrops += 1
        safeguards.partialPDUDiscards += 1
        logLimited(.reassembly, .warning, "handle \(link.handle.hex) (\(link.peer.address)): \(why)")
    }
}
