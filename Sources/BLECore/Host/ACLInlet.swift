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
    /// whatever the interleaving of links (4096 entries, rebuilt when a link comes or goes).
    /// Unretained: `links` owns them, and a lookup costs no reference count.
    @exclusivity(unchecked) private var table: [Unmanaged<HCIHost.Link>?] = []
    /// Cleared when the host goes away: its links' packets are then dropped, as the host's own
    /// path drops them.
    let isOpen = Atomic<Bool>(true)

    init(queue: DispatchQueue) { self.queue = queue }

    private func rebuildTable() {
        var t = [Unmanaged<HCIHost.Link>?](repeating: nil, count: 0x1000)
        for (handle, link) in links { t[Int(handle & 0x0FFF)] = Unmanaged.passUnretained(link) }
        table = links.isEmpty ? [] : t
    }

    /// The link with `handle`.
    @inline(__always)
    func link(_ handle: UInt16) -> HCIHost.Link? {
        let i = Int(handle & 0x0FFF)
        return i < table.count ? table[i]?.takeUnretainedValue() : nil
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

    /// The raw form of `deliverWholeATTPDU`, offered by transports that read bytes
    /// (`HCITransport.setACLReceiver`): `acl` is an ACL packet's header and data, valid only
    /// during the call. True when the ATT channel took the PDU without a copy; false leaves
    /// the packet to be built and handled as usual (including by `deliverWholeATTPDU`).
    @inline(__always)
    func deliverRawATTPDU(_ acl: UnsafeRawBufferPointer) -> Bool {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
        // Header (Vol 4, Part E, 5.4.2): handle and flags, data total length; then the L2CAP
        // basic header (Vol 3, Part A, 3.1): length, channel ID. One whole PDU, not a continuation.
        guard acl.count >= 8, isOpen.load(ordering: .relaxed) else { return false }
        let i = Int(acl[0]) | Int(acl[1] & 0x0F) << 8
        let l2capLength = Int(acl[4]) | Int(acl[5]) << 8
        guard (acl[1] >> 4) & 0b11 != ACLPacketBoundary.continuing.rawValue, l2capLength + 8 == acl.count,
              UInt16(acl[6]) | UInt16(acl[7]) << 8 == L2CAPChannelID.att,
              i < table.count, let entry = table[i] else { return false }
        // Unretained: `links` owns the link, removals happen only on this queue, and the link
        // is read only before the receiver runs (the receiver itself is retained for its call).
        return entry._withUnsafeGuaranteedRef { link in
            guard !link.reassembler.inProgress, l2capLength <= link.reassembler.maximumPDULength,
                  let receive = link.attRawReceiver else { return false }
            return receive(UnsafeRawBufferPointer(rebasing: acl[8...]))
        }
    }

    func forget(_ link: HCIHost.Link) {
        links.removeValue(forKey: link.handle)
    }
}
