import BLEWire

/// ACL reassembly of L2CAP basic-mode PDUs (Vol 3, Part A, 7.2; Vol 4, Part E, 5.4.2).
/// Input: a maximum PDU length selector, then fragments, each one header byte (bits 6-7:
/// Packet_Boundary_Flag, bits 0-5: data length) followed by its data; the bytes left at the
/// end become one L2CAP payload for a fragmenter round trip. Properties:
/// - a completed PDU is never longer than the maximum and its payload matches the L2CAP
///   length field of the bytes that were pushed; a PDU reassembled from fragments is never
///   longer than its channel's limit, and only PDUs over it are refused;
/// - a partial PDU is never thrown away uncounted: a start fragment that comes while one is
///   in progress adds one to `discardedPartialPDUs`, and so does a fragment that is dropped
///   while one is in progress;
/// - after any sequence of fragments, `ACLFragmenter`'s fragments of a payload reassemble to
///   exactly that payload (a start fragment always recovers the reassembler).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let maximum = [23, 27, 64, 247, 512, 65_535][Int(input.u8() % 6)]
    var reassembler = ACLReassembler(maximumPDULength: maximum)
    let channelLimit = [0, 23, 65][Int(input.u8() % 3)]

    let fragmentCount = Int(input.u8() % 16)
    for _ in 0..<fragmentCount where !input.isAtEnd {
        let header = input.u8()
        let boundary = ACLPacketBoundary(rawValue: header >> 6) ?? .continuing
        let fragment = ACLDataPacket(handle: 0x0040, boundary: boundary, data: input.take(Int(header & 0x3F)))
        // Odd channel IDs accept at most `channelLimit` bytes (what a destination channel accepts).
        let limit = { (cid: UInt16) in cid & 1 == 1 ? channelLimit : maximum }
        let wasInProgress = reassembler.inProgress, discards = reassembler.discardedPartialPDUs
        let outcome = reassembler.receive(fragment, limit: limit)
        if wasInProgress {
            let counted = reassembler.discardedPartialPDUs - discards
            if boundary != .continuing {
                fuzzCheck(counted == 1, "a start fragment discarded a partial PDU and counted \(counted)")
            } else if case .dropped = outcome {
                fuzzCheck(counted == 1, "a dropped continuation discarded a partial PDU and counted \(counted)")
            }
        }
        switch outcome {
        case .complete(let cid, let payload):
            fuzzCheck(payload.count <= maximum, "completed PDU of \(payload.count) bytes over the maximum \(maximum)")
            fuzzCheck(fragment.data.count == payload.count + 4 || payload.count <= limit(cid), "reassembled PDU of \(payload.count) bytes over its channel's limit")
        case .oversized(let cid, let length, let max, _):
            fuzzCheck(length > max && max == min(limit(cid), maximum), "refused a PDU of \(length) bytes under the limit \(max)")
        case .incomplete, .dropped:
            break
        }
    }

    // Round trip through the fragmenter from whatever state is left.
    let fragmentSize = 1 + Int(input.u8() % 64)
    let channelID = input.u16()
    let payload = input.rest()
    let fragments = ACLFragmenter.fragments(handle: 0x0040, channelID: channelID, payload: payload, fragmentSize: fragmentSize)
    fuzzCheck(fragments.reduce(0) { $0 + $1.data.count } == payload.count + 4, "fragments lost bytes")
    for (i, fragment) in fragments.enumerated() {
        let outcome = reassembler.push(fragment)
        let last = i == fragments.count - 1
        if payload.count > maximum {
            if case .complete = outcome { fuzzCheck(false, "PDU over the maximum completed") }
            continue
        }
        switch outcome {
        case .complete(let cid, let got):
            fuzzCheck(last && cid == channelID && got == payload, "reassembled PDU differs from the fragmented one")
        case .incomplete:
            fuzzCheck(!last, "last fragment left the PDU incomplete")
        case .dropped(let why):
            fuzzCheck(i == 0 && !last, "fragment \(i) of \(fragments.count) dropped: \(why)")
        }
    }
    return 0
}
