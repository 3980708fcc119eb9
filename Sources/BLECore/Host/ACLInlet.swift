import Dispatch
import Synchronization

/// The host's per-link receive state and its fast path: a whole L2CAP PDU in one ACL packet
/// on a link's ATT channel (a notification, the hot case) goes from the transport callback
/// straight to the channel, without entering the host. The transport's handler holds the
/// inlet strongly, so the path touches no weak reference and no actor per packet; anything
/// else (events, fragments, other channels, unknown handles) falls through to the host.
///
/// Owned by the host, mutated by it and read by the callback, both on the adapter queue.
final class ACLInlet: @unchecked Sendable { // `links` and its table are touched only on the adapter queue; `isOpen` is atomic
    let queue: DispatchQueue
    // Unchecked: confined to the adapter queue; the dynamic checks showed in the per-packet profile.
    @exclusivity(unchecked) var links: [UInt16: HCIHost.Link] = [:] {
        didSet { rebuildTable() }
    }
    /// `links` indexed by the 12-bit connection handle: a packet's link without hashing,
    /// whatever the interleaving of links (4096 references, rebuilt when a link comes or goes).
    @exclusivity(unchecked) private var table: [HCIHost.Link?] = []
    /// Cleared when the host goes away: its links' packets are then dropped, as the host's own
    /// path drops them.
    let isOpen = Atomic<Bool>(true)

    init(queue: DispatchQueue) { self.queue = queue }

    private func rebuildTable() {
        var t = [HCIHost.Link?](repeating: nil, count: 0x1000)
        for (handle, link) in links { t[Int(handle & 0x0FFF)] = link }
        table = links.isEmpty ? [] : t
    }

    /// The link with `handle`.
    @inline(__always)
    func link(_ handle: UInt16) -> HCIHost.Link? {
        let i = Int(handle & 0x0FFF)
        return i < table.count ? table[i] : nil
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
    }
}
