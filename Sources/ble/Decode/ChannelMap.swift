import BLEWire

/// What the dynamic L2CAP channels of a capture carry, learned from the signaling that opened
/// them (Core Specification 5.4 Vol 3, Part A): BR/EDR Connection Request/Response (4.2, 4.3),
/// LE Credit Based Connection Request/Response (4.22, 4.23) and Credit Based Connection
/// Request/Response (4.25, 4.26). A channel ends with its Disconnection Response (4.7) or
/// with its link's Disconnection Complete.
///
/// A CID names the receiver's end, so each channel is two entries: the requester's source
/// CID, on which packets travel toward the requester, and the responder's destination CID,
/// on which they travel toward the responder. Both tables are bounded, whatever the capture
/// holds.
struct ChannelMap {
    /// How the channel frames its data.
    enum Framing: Equatable {
        /// Basic mode B-frames (BR/EDR): the payload is the SDU.
        case basic
        /// K-frames (credit-based): SDUs with an SDU Length in the first K-frame, bounded by
        /// the receiver's MTU and MPS.
        case creditBased(mtu: Int, mps: Int)
    }

    struct Channel {
        var psm: UInt16
        var framing: Framing
        var reassembler: KFrameReassembler?
    }

    /// `sent`: the direction of the packets that carry `cid` (host to controller or back).
    struct Key: Hashable { var handle: UInt16; var sent: Bool; var cid: UInt16 }

    private enum Pending {
        case classic(psm: UInt16, sourceCID: UInt16)
        case le(psm: UInt16, sourceCID: UInt16, mtu: Int, mps: Int)
        case enhanced(psm: UInt16, sourceCIDs: [UInt16], mtu: Int, mps: Int)
    }

    private struct PendingKey: Hashable { var handle: UInt16; var requesterSent: Bool; var identifier: UInt8 }

    /// At most this many open channel ends and unanswered requests are remembered.
    static let limit = 1024

    private(set) var channels: [Key: Channel] = [:]
    private var pending: [PendingKey: Pending] = [:]

    /// The channel a packet on `cid` belongs to.
    func channel(handle: UInt16, sent: Bool, cid: UInt16) -> Channel? {
        channels[Key(handle: handle, sent: sent, cid: cid)]
    }

    mutating func update(_ key: Key, _ channel: Channel) {
        if channels[key] != nil || channels.count < Self.limit { channels[key] = channel }
    }

    /// Learns from one signaling command sent in direction `sent` on link `handle`.
    mutating func observe(_ cmd: L2CAPSignalingCommand, handle: UInt16, sent: Bool) {
        let asRequest = PendingKey(handle: handle, requesterSent: sent, identifier: cmd.identifier)
        let asResponse = PendingKey(handle: handle, requesterSent: !sent, identifier: cmd.identifier)
        func remember(_ p: Pending) {
            if pending.count < Self.limit { pending[asRequest] = p }
        }
        /// Opens both ends: the requester (who did not send this response) receives on
        /// `source`, the responder (who sent it) on `destination`.
        func open(psm: UInt16, source: UInt16, destination: UInt16, requester: Framing, responder: Framing) {
            update(Key(handle: handle, sent: sent, cid: source), Channel(psm: psm, framing: requester, reassembler: Self.reassembler(requester)))
            update(Key(handle: handle, sent: !sent, cid: destination), Channel(psm: psm, framing: responder, reassembler: Self.reassembler(responder)))
        }
        switch cmd.body {
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, _):
            remember(.le(psm: psm, sourceCID: scid, mtu: Int(mtu), mps: Int(mps)))
        case .creditBasedConnectionRequest(let psm, let mtu, let mps, _, let scids):
            remember(.enhanced(psm: psm, sourceCIDs: scids, mtu: Int(mtu), mps: Int(mps)))
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, _, let result):
            guard case .le(let psm, let scid, let rmtu, let rmps)? = pending.removeValue(forKey: asResponse), result == 0 else { return }
            open(psm: psm, source: scid, destination: dcid, requester: .creditBased(mtu: rmtu, mps: rmps), responder: .creditBased(mtu: Int(mtu), mps: Int(mps)))
        case .creditBasedConnectionResponse(let mtu, let mps, _, _, let dcids):
            guard case .enhanced(let psm, let scids, let rmtu, let rmps)? = pending.removeValue(forKey: asResponse) else { return }
            // A refused channel of the request has destination CID 0x0000 (4.26).
            for (scid, dcid) in zip(scids, dcids) where dcid != 0 {
                open(psm: psm, source: scid, destination: dcid, requester: .creditBased(mtu: rmtu, mps: rmps), responder: .creditBased(mtu: Int(mtu), mps: Int(mps)))
            }
        case .creditBasedReconfigureRequest(let mtu, let mps, let dcids):
            // The sender receives on `dcids` from now on with the new MTU and MPS.
            for cid in dcids {
                let key = Key(handle: handle, sent: !sent, cid: cid)
                guard var c = channels[key], case .creditBased = c.framing else { continue }
                c.framing = .creditBased(mtu: Int(mtu), mps: Int(mps))
                c.reassembler = Self.reassembler(c.framing)
                channels[key] = c
            }
        case .disconnectionResponse(let dcid, let scid):
            // Sent by the end whose CID is `dcid`.
            channels[Key(handle: handle, sent: !sent, cid: dcid)] = nil
            channels[Key(handle: handle, sent: sent, cid: scid)] = nil
        case .other(let code, let data):
            switch ClassicSignaling(code: code, data: data) {
            case .connectionRequest(let psm, let scid)?:
                remember(.classic(psm: psm, sourceCID: scid))
            case .connectionResponse(let dcid, _, let result, _)?:
                if result == 0x0001 { return }  // pending: the final response follows
                guard case .classic(let psm, let scid)? = pending.removeValue(forKey: asResponse), result == 0 else { return }
                open(psm: psm, source: scid, destination: dcid, requester: .basic, responder: .basic)
            case nil:
                break
            }
        default:
            break
        }
    }

    /// Forgets everything about a link that ended (its handle may be given to another).
    mutating func linkEnded(handle: UInt16) {
        channels = channels.filter { $0.key.handle != handle }
        pending = pending.filter { $0.key.handle != handle }
    }

    private static func reassembler(_ framing: Framing) -> KFrameReassembler? {
        guard case .creditBased(let mtu, let mps) = framing else { return nil }
        return KFrameReassembler(mtu: mtu, mps: mps)
    }
}
