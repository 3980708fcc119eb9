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

    /// The inlet's one test (Vol 4, Part E, 5.4.2 and Vol 3, Part A, 3.1): `l2cap`, the data of
    /// an ACL packet that is not a continuation, holds exactly one whole L2CAP PDU for the ATT
    /// channel of `link`, which has no reassembly in progress, within the largest PDU it takes.
    @inline(__always)
    private static func isWholeATTPDU(_ link: HCIHost.Link, continuing: Bool, _ l2cap: UnsafeRawBufferPointer) -> Bool {
        guard !continuing, l2cap.count >= 4, !link.reassembler.inProgress else { return false }
        let length = Int(l2cap[0]) | Int(l2cap[1]) << 8
        return length + 4 == l2cap.count && length <= link.reassembler.maximumPDULength
            && UInt16(l2cap[2]) | UInt16(l2cap[3]) << 8 == L2CAPChannelID.att
    }

    /// Delivers `packet` to its link's ATT channel when it holds one whole ATT PDU; false
    /// leaves it to the host (which reassembles fragments into the same channel). Called from
    /// the transport callback on the adapter queue, for transports that hand over packets.
    @inline(__always)
    func deliverWholeATTPDU(_ packet: ACLDataPacket) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        guard isOpen.load(ordering: .relaxed), let link = link(packet.handle), let att = link.att,
              packet.data.withUnsafeBytes({ Self.isWholeATTPDU(link, continuing: packet.boundary == .continuing, $0) })
        else { return false }
        att.deliver(packet.data[4...])
        return true
    }

    /// The same for transports that read bytes (`HCITransport.setACLReceiver`): `acl` is an
    /// ACL packet's header and data, valid only during the call, offered to the ATT channel's
    /// raw receiver (`L2CAPChannel.setRawReceiver`: the bearer's notification receiver). True
    /// when it took the PDU without a copy; false leaves the packet to be built and handled as
    /// usual, by `deliverWholeATTPDU` first.
    @inline(__always)
    func deliverRawATTPDU(_ acl: UnsafeRawBufferPointer) -> Bool {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
        // The ACL header: handle and flags, data total length (checked by the transport).
        guard acl.count >= 8, isOpen.load(ordering: .relaxed) else { return false }
        let i = Int(acl[0]) | Int(acl[1] & 0x0F) << 8
        guard i < table.count, let entry = table[i] else { return false }
        let continuing = (acl[1] >> 4) & 0b11 == ACLPacketBoundary.continuing.rawValue
        // Unretained: `links` owns the link, removals happen only on this queue, and the link
        // is read only before the receiver runs (the receiver itself is retained for its call).
        return entry._withUnsafeGuaranteedRef { link in
            let l2cap = UnsafeRawBufferPointer(rebasing: acl[4...])
            guard Self.isWholeATTPDU(link, continuing: continuing, l2cap), let receive = link.attRawReceiver else { return false }
            return receive(UnsafeRawBufferPointer(rebasing: l2cap[4...]))
        }
    }

    func forget(_ link: HCIHost.Link) {
        links.removeValue(forKey: link.handle)
    }
}
