/// ACL data: credits, fair scheduling across links, fragmentation and reassembly
/// (Core Spec Vol 4, Part E, 4.1 and 5.4.2).
extension HCIHost {
    /// Per-connection state kept by the host.
    final class Link {
        let handle: UInt16
        let peer: LEAddress
        // Unchecked: a Link is touched only by its host, on the adapter executor.
        @exclusivity(unchecked) var reassembler = ACLReassembler()
        /// Fragments waiting for a controller buffer; the last fragment of a PDU carries its waiter.
        var queue: [(packet: ACLDataPacket, done: Waiters<Void, LinkError>.ID?)] = []
        var queueHead = 0
        /// Fragments handed to the controller and not yet reported by Number Of Completed Packets.
        var inFlight = 0
        var channels: [UInt16: FixedChannel] = [:]
        /// `channels[0x0004]`, looked up on every inbound PDU.
        @exclusivity(unchecked) var att: FixedChannel?
        /// The ATT channel's raw receiver (`FixedChannel.setRawReceiver`), for the inlet.
        @exclusivity(unchecked) var attRawReceiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?

        init(handle: UInt16, peer: LEAddress) {
            self.handle = handle
            self.peer = peer
        }

        var hasQueued: Bool { queueHead < queue.count }
    }

    /// Sets the controller's LE ACL buffer geometry (from LE Read Buffer Size) and its credits.
    public func setACLBuffers(packetLength: Int, packetCount: Int) {
        aclPacketLength = max(1, packetLength)
        aclPacketCount = max(1, packetCount)
        aclCredits = aclPacketCount
    }

    /// Registers a new connection so its data can flow. The central calls this on LE
    /// Connection Complete, before any data for the handle can arrive.
    public func addLink(handle: UInt16, peer: LEAddress) {
        if links[handle] != nil { linkLost(handle: handle, error: .closed(peer: "handle \(handle.hex)")) }
        links[handle] = Link(handle: handle, peer: peer)
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

    /// Installs the raw receiver of a link's ATT channel (see `ACLInlet.deliverRawATTPDU`).
    nonisolated func setATTRawReceiver(handle: UInt16, _ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        inlet.link(handle)?.attRawReceiver = receiver
    }

    /// Sends one L2CAP basic-mode PDU; returns once its last fragment was handed to the
    /// controller. A cancelled caller returns at once with `LinkError.cancelled`; fragments
    /// already queued still go out (a PDU is never cut short on the link).
    public func sendL2CAP(handle: UInt16, channelID: UInt16, payload: [UInt8]) async throws(LinkError) {
        if let lostReason { throw .transportLost(lostReason) }
        guard let link = links[handle] else { throw .closed(peer: "handle \(handle.hex)") }
        // The error is only built when needed: this is the path of every Write Command.
        let peer = link.peer.address
        let result = await sendWaiters.wait(cancelled: { _ in .failure(.cancelled(peer: "\(peer)", handle: handle, channelID: channelID)) }) { id in
            enqueue(link: link, channelID: channelID, payload: payload, done: id)
        }
        try result.get()
    }

    /// Queues a PDU without waiting when the link still exists.
    func enqueueIfLinked(handle: UInt16, channelID: UInt16, payload: [UInt8]) {
        guard lostReason == nil, let link = links[handle] else { return }
        enqueue(link: link, channelID: channelID, payload: payload)
    }

    /// Queues a PDU without waiting (the host's own signaling and SMP answers).
    func enqueue(link: Link, channelID: UInt16, payload: [UInt8], done: Waiters<Void, LinkError>.ID? = nil) {
        let fragments = ACLFragmenter.fragments(handle: link.handle, channelID: channelID, payload: payload, fragmentSize: aclPacketLength)
        for (i, f) in fragments.enumerated() {
            link.queue.append((f, i == fragments.count - 1 ? done : nil))
        }
        if !readyLinks.contains(link.handle) { readyLinks.append(link.handle) }
        pumpACL()
    }

    /// Hands queued fragments to the controller while it has buffers, one fragment per link in
    /// turn, so a busy link never starves another.
    func pumpACL() {
        while aclCredits > 0, !readyLinks.isEmpty, lostReason == nil {
            let handle = readyLinks.removeFirst()
            guard let link = links[handle], link.hasQueued else { continue }
            let (packet, done) = link.queue[link.queueHead]
            link.queueHead += 1
            if link.queueHead == link.queue.count {
                link.queue.removeAll(keepingCapacity: true)
                link.queueHead = 0
            } else {
                readyLinks.append(handle)
            }
            do {
                try transport.send(.acl(packet))
            } catch {
                if let done { sendWaiters.resume(done, with: .failure(.transportLost("\(error)"))) }
                continue
            }
            aclCredits -= 1
            link.inFlight += 1
            if let done { sendWaiters.resume(done, with: .success(())) }
        }
    }

    func returnCredits(handle: UInt16, count: Int) {
        guard let link = links[handle] else { return } // credits of a closed link were returned at disconnect
        let n = min(count, link.inFlight)
        link.inFlight -= n
        aclCredits += n
    }

    func receiveACL(_ packet: ACLDataPacket) {
        guard let link = inlet.link(packet.handle) else {
            logger.log(.warning, "dropping ACL data for unknown handle \(packet.handle.hex) (\(packet.data.count) bytes)")
            return
        }
        if let cid = link.reassembler.singleFragmentChannel(packet) {
            routeL2CAP(link: link, channelID: cid, payload: packet.data[4...])
            return
        }
        switch link.reassembler.receive(packet) {
        case .complete(let cid, let payload):
            routeL2CAP(link: link, channelID: cid, payload: payload)
        case .incomplete:
            break
        case .dropped(let why):
            logger.log(.warning, "handle \(packet.handle.hex): \(why)")
        }
    }

    /// Disconnection Complete: return the link's credits, fail its queue and close its channels.
    func linkDisconnected(handle: UInt16, reason: HCIStatus) {
        guard let link = links[handle] else { return }
        linkLost(handle: handle, error: .disconnected(peer: "\(link.peer.address)", reason: reason))
    }

    func linkLost(handle: UInt16, error: LinkError) {
        guard let link = links[handle] else { return }
        inlet.forget(link)
        aclCredits += link.inFlight
        link.inFlight = 0
        readyLinks.removeAll { $0 == handle }
        for entry in link.queue[link.queueHead...] {
            if let done = entry.done { sendWaiters.resume(done, with: .failure(error)) }
        }
        link.queue.removeAll()
        link.queueHead = 0
        link.reassembler.reset()
        for channel in link.channels.values { channel.closed(error) }
        link.channels.removeAll()
        link.att = nil
        link.attRawReceiver = nil
        pumpACL()
    }
}
