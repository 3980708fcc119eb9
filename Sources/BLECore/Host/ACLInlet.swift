import Dispatch
import Synchronization

/// The host's per-link receive state and its fast path: a whole L2CAP PDU in one ACL packet
/// on a link's ATT channel (a notification, the hot case) goes from the transport callback
/// straight to the channel, without entering the host. The transport's handler holds the
/// inlet strongly, so the path touches no weak reference and no actor per packet; anything
/// else (events, fragments, other channels, unknown handles) falls through to the host.
///
/// Owned by the host, mutated by it and read by the callback, both on the adapter queue.
final class ACLInlet: @unchecked Sendable { // `links` and `last` are touched only on the adapter queue; `isOpen` is atomic
    let queue: DispatchQueue
    // Unchecked: confined to the adapter queue; the dynamic checks showed in the per-packet profile.
    @exclusivity(unchecked) var links: [UInt16: HCIHost.Link] = [:]
    /// The link of the last inbound packet (data comes in runs on one link).
    @exclusivity(unchecked) var last: HCIHost.Link?
    /// Cleared when the host goes away: its links' packets are then dropped, as the host's own
    /// path drops them.
    let isOpen = Atomic<Bool>(true)

    init(queue: DispatchQueue) { self.queue = queue }

    /// The link with `handle`, remembered for the next packet.
    @inline(__always)
    func link(_ handle: UInt16) -> HCIHost.Link? {
        if let last, last.handle == handle { return last }
        guard let found = links[handle] else { return nil }
        last = found
        return found
    }

    /// Delivers `packet` when it holds one whole PDU for a link's ATT channel; false leaves it
    /// to the host. Called from the transport callback on the adapter queue.
    @inline(__always)
    func deliverWholeATTPDU(_ packet: ACLDataPacket) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        guard isOpen.load(ordering: .relaxed), let link = link(packet.handle), let att = link.att,
              link.reassembler.singleFragmentChannel(packet) == L2CAPChannelID.att else { return false }
        att.deliver(packet.data[4...])
        return true
    }

    func forget(_ link: HCIHost.Link) {
        links.removeValue(forKey: link.handle)
        if last === link { last = nil }
    }
}
