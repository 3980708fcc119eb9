import Dispatch
import Synchronization
import BLEWire
import BLETransport

/// The host's per-link receive state and the one way in for inbound ACL data: every ACL
/// packet goes from the transport callback to its link's reassembler here, and every PDU
/// completed for a fixed channel registered on the link (ATT 0x0004, a Security Manager
/// channel, others) or for an open LE credit-based channel goes straight to that channel,
/// without entering the host; a PDU that
/// arrived whole in one packet (a notification, the hot case) is not copied. The transport's
/// handler holds the inlet strongly, so the path touches no weak reference and no actor per
/// packet. What the inlet does not take (`Leftover`: the host's own channels, K-frames of a
/// CID with no open channel, unknown handles, drops to count and log) it hands to the host.
///
/// Owned by the host, mutated by it and read by the callback, both on the adapter queue: the
/// links are confined to it (checked in debug builds).
final class ACLInlet: Sendable {
    /// The links and their table, on the adapter queue.
    struct Links {
        var byHandle: [UInt16: HCIHost.Link] = [:] {
            didSet { rebuildTable() }
        }
        /// `byHandle` indexed by the 12-bit connection handle: a packet's link without hashing,
        /// whatever the interleaving of links (4096 entries, rebuilt when a link comes or goes).
        /// Unretained: `byHandle` owns them, and a lookup costs no reference count.
        private(set) var table: [Unmanaged<HCIHost.Link>?] = []

        private mutating func rebuildTable() {
            var t = [Unmanaged<HCIHost.Link>?](repeating: nil, count: 0x1000)
            for (handle, link) in byHandle { t[Int(handle & 0x0FFF)] = Unmanaged.passUnretained(link) }
            table = byHandle.isEmpty ? [] : t
        }
    }
    private let state: QueueConfined<Links>
    /// Cleared when the host goes away: its links' packets are then dropped, as the host's own
    /// path drops them.
    let isOpen = Atomic<Bool>(true)

    init(queue: DispatchQueue) { state = QueueConfined(Links(), on: queue) }

    /// The links by handle (the host's `links`).
    var links: [UInt16: HCIHost.Link] {
        get { state.value.byHandle }
        _modify { yield &state.value.byHandle }
    }

    /// The table entry of the link with connection handle index `i`, if any.
    @inline(__always)
    private func entry(_ i: Int) -> Unmanaged<HCIHost.Link>? {
        i < state.value.table.count ? state.value.table[i] : nil
    }

    /// The link with `handle`.
    @inline(__always)
    func link(_ handle: UInt16) -> HCIHost.Link? {
        entry(Int(handle & 0x0FFF))?.takeUnretainedValue()
    }

    /// The inlet's one test (Vol 4, Part E, 5.4.2 and Vol 3, Part A, 3.1): `l2cap`, the data of
    /// an ACL packet that is not a continuation, holds exactly one whole L2CAP PDU, and `link`
    /// has no reassembly in progress. Returns the PDU's channel.
    @inline(__always)
    private static func wholePDUChannel(_ link: HCIHost.Link, continuing: Bool, _ l2cap: UnsafeRawBufferPointer) -> UInt16? {
        guard !continuing, l2cap.count >= 4, !link.reassembler.inProgress else { return nil }
        let length = Int(l2cap[0]) | Int(l2cap[1]) << 8
        guard length + 4 == l2cap.count else { return nil }
        return UInt16(l2cap[2]) | UInt16(l2cap[3]) << 8
    }

    /// What an ACL packet leaves for the host once the inlet has taken it.
    enum Leftover {
        /// Nothing: delivered to a fixed or credit-based channel, or a fragment kept for reassembly.
        case none
        /// A whole PDU for a channel the inlet does not deliver to: LE signaling, SMP without
        /// a registered channel, a dynamic CID with no open credit-based channel, an
        /// unregistered channel.
        case pdu(HCIHost.Link, channelID: UInt16, payload: ArraySlice<UInt8>)
        /// ACL data on a handle with no link (`dataLength` bytes).
        case unknownHandle(UInt16, dataLength: Int)
        /// The reassembler dropped a fragment (`why`, for the log).
        case dropped(HCIHost.Link, why: String)
        /// The reassembler threw away a partial PDU (`why`, for the log): a start fragment came
        /// before it completed, or a continuation overran it. `then` is what the packet left
        /// once the partial PDU was gone (`.none` when the packet caused the discard itself).
        indirect case partialDiscarded(HCIHost.Link, why: String, then: Leftover)
        /// A PDU longer than its channel accepts was refused unbuffered (see `ACLReassembler`).
        case oversized(HCIHost.Link, channelID: UInt16, length: Int, maximum: Int, head: ArraySlice<UInt8>)
    }

    /// Takes one ACL packet (Vol 4, Part E, 5.4.2): reassembles it on its link (Vol 3, Part A,
    /// 7.2) and hands a completed PDU for a registered fixed channel to that channel; the
    /// rest is left to the host. Called on the adapter queue, from the transport callback
    /// for every ACL packet value.
    @inline(__always)
    func receive(_ packet: ACLDataPacket) -> Leftover {
        guard isOpen.load(ordering: .relaxed) else { return .none }
        guard let link = link(packet.handle) else { return .unknownHandle(packet.handle, dataLength: packet.data.count) }
        if let cid = link.reassembler.singleFragmentChannel(packet), cid != L2CAPChannelID.att || packet.data.count - 4 <= link.attMaximumPDU {
            // The PDU is the packet's data after the basic header: a view, no copy. An ATT PDU
            // longer than ATT_MTU goes on to be refused like one in several fragments.
            return deliver(link, channelID: cid, payload: packet.data[4...])
        }
        // A start fragment while a PDU is in progress: the partial PDU is reported apart from
        // what the fragment itself gives (a whole PDU, say).
        if packet.boundary != .continuing, let why = link.reassembler.discardPartial() {
            return .partialDiscarded(link, why: "start fragment while \(why)", then: reassemble(packet, on: link))
        }
        return reassemble(packet, on: link)
    }

    private func reassemble(_ packet: ACLDataPacket, on link: HCIHost.Link) -> Leftover {
        let discards = link.reassembler.discardedPartialPDUs
        switch link.reassembler.receive(packet, limit: { cid in HCIHost.inboundLimit(link: link, channelID: cid) }) {
        case .complete(let cid, let payload): return deliver(link, channelID: cid, payload: payload)
        case .incomplete: return .none
        case .dropped(let why):
            if link.reassembler.discardedPartialPDUs > discards { return .partialDiscarded(link, why: why, then: .none) }
            return .dropped(link, why: why)
        case .oversized(let cid, let length, let maximum, let head):
            return .oversized(link, channelID: cid, length: length, maximum: maximum, head: head)
        }
    }

    /// A complete PDU: to the link's fixed channel `channelID` when one is registered (LE
    /// signaling excepted, which the host answers itself), else to the host.
    @inline(__always)
    private func deliver(_ link: HCIHost.Link, channelID: UInt16, payload: ArraySlice<UInt8>) -> Leftover {
        if channelID == L2CAPChannelID.att, let att = link.att {
            att.deliver(payload)
            return .none
        }
        // Fixed channels are 0x0001-0x003F on LE-U (Vol 3, Part A, 2.1); the rest are dynamic.
        if channelID < 0x0040, channelID != L2CAPChannelID.leSignaling, let channel = link.channels[channelID] {
            channel.deliver(payload)
            return .none
        }
        // A K-frame of an LE credit-based channel goes to it straight from here too (its only
        // way in): no weak load of the host, no `Leftover` to route.
        if channelID >= 0x0040, let channel = link.creditBased.channels[channelID] {
            channel.deliverOnQueue(payload)
            return .none
        }
        return .pdu(link, channelID: channelID, payload: payload)
    }

    /// The same for transports that read bytes (`HCITransport.setACLReceiver`): `acl` is an
    /// ACL packet's header and data, valid only during the call. A whole PDU in it goes
    /// without a copy to the ATT channel's raw receiver (`L2CAPChannel.setRawReceiver`: the
    /// bearer's notification receiver) within the bearer's ATT_MTU, or as a K-frame to its open
    /// LE credit-based channel (which copies only the SDU out). True when it took the PDU;
    /// false leaves the packet to be built and handled as usual, by `receive`.
    @inline(__always)
    func deliverRawPDU(_ acl: UnsafeRawBufferPointer) -> Bool {
        // The ACL header: handle and flags, data total length (checked by the transport).
        guard acl.count >= 8, isOpen.load(ordering: .relaxed) else { return false }
        guard let entry = entry(Int(acl[0]) | Int(acl[1] & 0x0F) << 8) else { return false }
        let continuing = (acl[1] >> 4) & 0b11 == ACLPacketBoundary.continuing.rawValue
        // Unretained: `links` owns the link, removals happen only on this queue, and the link
        // is read only before the receiver runs (the receiver itself is retained for its call).
        return entry._withUnsafeGuaranteedRef { link in
            let l2cap = UnsafeRawBufferPointer(rebasing: acl[4...])
            guard let cid = Self.wholePDUChannel(link, continuing: continuing, l2cap) else { return false }
            let payload = UnsafeRawBufferPointer(rebasing: l2cap[4...])
            if cid == L2CAPChannelID.att {
                guard payload.count <= link.attMaximumPDU, let receive = link.attRawReceiver else { return false }
                return receive(payload)
            }
            // Fixed channels are 0x0001-0x003F on LE-U (Vol 3, Part A, 2.1); the rest are dynamic.
            guard cid >= 0x0040, let channel = link.creditBased.channels[cid] else { return false }
            channel.deliverOnQueue(payload)
            return true
        }
    }
}
