/// Rebuilds L2CAP basic-mode PDUs from the ACL fragments of one connection
/// (Core Spec Vol 3, Part A, 7.2 and Vol 4, Part E, 5.4.2).
///
/// A start fragment begins a PDU whose total size comes from the L2CAP length field; continuation
/// fragments append until it is complete. Bounded: a PDU can never grow past
/// `maximumPDULength` + 4 bytes, nor past what its destination channel accepts (`limit`): a
/// start fragment that announces more is refused (`.oversized`) and the continuations of that
/// PDU are discarded as they come, never buffered. A start fragment arriving mid-PDU drops the
/// partial PDU and starts over; a continuation with no PDU in progress is dropped. Both are
/// reported, and every partial PDU thrown away is counted (`discardedPartialPDUs`); a caller
/// that must report a start fragment's discard beside its own outcome, or a discard at
/// disconnect, calls `discardPartial()` first.
///
/// `receive` hands out the payload as a view: of the fragment itself for a PDU in one
/// fragment (no copy), of the reassembly buffer otherwise (reused for the next PDU).
///
///     var r = ACLReassembler()
///     switch r.receive(aclPacket) { case .complete(let cid, let payload): ... default: break }
public struct ACLReassembler: Sendable {
    /// What one fragment produced.
    public enum Outcome: Sendable, Equatable {
        /// A whole PDU: channel ID and information payload.
        case complete(channelID: UInt16, payload: [UInt8])
        /// More fragments are needed.
        case incomplete
        /// The fragment was dropped or reset a partial PDU; the text says why (for the log).
        case dropped(String)
    }

    /// What one fragment produced, the payload as a view of the received bytes.
    public enum SliceOutcome: Sendable, Equatable {
        /// A whole PDU: channel ID and information payload (indices are those of the
        /// underlying array, not 0-based).
        case complete(channelID: UInt16, payload: ArraySlice<UInt8>)
        /// More fragments are needed (or the fragment belongs to a refused PDU and was discarded).
        case incomplete
        /// The fragment was dropped or reset a partial PDU; the text says why (for the log).
        case dropped(String)
        /// A start fragment announced `length` bytes on `channelID`, more than the `maximum`
        /// the channel accepts: refused, and its continuations are discarded. `head` is the
        /// information payload the start fragment carried (a signaling command's code and
        /// identifier, for its Command Reject).
        case oversized(channelID: UInt16, length: Int, maximum: Int, head: ArraySlice<UInt8>)
    }

    /// Largest L2CAP information payload accepted (the L2CAP length field is 16 bits).
    public let maximumPDULength: Int
    private var buffer: [UInt8] = []
    private var expected = 0
    public private(set) var inProgress = false
    /// Bytes still to come of a refused PDU: its continuations are discarded.
    private var discarding = 0
    /// Partial PDUs thrown away so far: by a start fragment that came before they completed,
    /// by a continuation that overran their L2CAP length, by `discardPartial()`.
    public private(set) var discardedPartialPDUs = 0

    public init(maximumPDULength: Int = 65_535) {
        self.maximumPDULength = maximumPDULength
    }

    /// Like `receive`, with the payload copied into its own array.
    public mutating func push(_ packet: ACLDataPacket) -> Outcome {
        switch receive(packet) {
        case .complete(let cid, let payload): return .complete(channelID: cid, payload: Array(payload))
        case .incomplete: return .incomplete
        case .dropped(let why): return .dropped(why)
        case .oversized(let cid, let length, let maximum, _):
            return .dropped("L2CAP length \(length) on channel 0x\(String(cid, radix: 16, uppercase: true)) exceeds the \(maximum) bytes it accepts")
        }
    }

    /// The channel ID when `packet` holds one whole PDU in a single start fragment and no
    /// PDU is in progress (the common case): its payload is then `packet.data[4...]`, and
    /// nothing else needs doing. Nil for anything `receive` must handle.
    @inline(__always)
    public func singleFragmentChannel(_ packet: ACLDataPacket) -> UInt16? {
        guard !inProgress, discarding == 0, packet.boundary != .continuing else { return nil }
        let d = packet.data
        guard d.count >= 4 else { return nil }
        let length = Int(d[0]) | Int(d[1]) << 8
        guard length + 4 == d.count, length <= maximumPDULength else { return nil }
        return UInt16(d[2]) | UInt16(d[3]) << 8
    }

    /// Takes one fragment; a completed PDU's payload is a view, valid as long as it is held
    /// (a copy-on-write view: later fragments never change it).
    public mutating func receive(_ packet: ACLDataPacket) -> SliceOutcome {
        let maximum = maximumPDULength
        return receive(packet) { _ in maximum }
    }

    /// Like `receive(_:)`, with `limit` giving the largest information payload the destination
    /// channel accepts (asked once per PDU, when its basic header is complete).
    public mutating func receive(_ packet: ACLDataPacket, limit: (UInt16) -> Int) -> SliceOutcome {
        switch packet.boundary {
        case .firstFlushable, .firstNonFlushable, .complete:
            let discarded = discardPartial()
            // Also the PDU completed last, whose view was likely released by now.
            buffer.removeAll(keepingCapacity: true)
            discarding = 0
            let outcome = start(packet.data, limit: limit)
            if let discarded, case .incomplete = outcome { return .dropped("start fragment while \(discarded)") }
            return outcome
        case .continuing:
            if discarding > 0 {
                guard packet.data.count <= discarding else {
                    discarding = 0
                    return .dropped("continuation overruns the L2CAP length of a refused PDU by \(packet.data.count - discarding) bytes")
                }
                discarding -= packet.data.count
                return .incomplete
            }
            guard inProgress else {
                return .dropped("continuation fragment (\(packet.data.count) bytes) with no PDU in progress")
            }
            // While the basic header is incomplete the PDU's size is unknown: the fragment is
            // taken and sized by `finishIfComplete`.
            guard buffer.count + packet.data.count <= expected || (expected == 4 && buffer.count < 4) else {
                let over = buffer.count + packet.data.count - expected
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                discardedPartialPDUs += 1
                return .dropped("continuation overruns the L2CAP length by \(over) bytes: PDU discarded")
            }
            buffer.append(contentsOf: packet.data)
            return finishIfComplete(limit: limit)
        }
    }

    private mutating func start(_ data: [UInt8], limit: (UInt16) -> Int) -> SliceOutcome {
        // Fast path: a whole PDU in one fragment (the common notification case).
        if data.count >= 4 {
            let length = Int(data[0]) | Int(data[1]) << 8
            let cid = UInt16(data[2]) | UInt16(data[3]) << 8
            if length > maximumPDULength {
                return .dropped("L2CAP length \(length) exceeds the maximum \(maximumPDULength)")
            }
            if data.count > length + 4 {
                return .dropped("start fragment holds \(data.count - 4) bytes but the L2CAP length says \(length)")
            }
            // Also for a PDU whole in this fragment: what the channel refuses, it never sees.
            let maximum = min(limit(cid), maximumPDULength)
            if length > maximum {
                discarding = length + 4 - data.count
                return .oversized(channelID: cid, length: length, maximum: maximum, head: data[4...])
            }
            if data.count == length + 4 {
                return .complete(channelID: cid, payload: data[4...])
            }
            expected = length + 4
        } else {
            // The basic header itself is split; the PDU is sized once its 4 bytes arrive.
            expected = 4
        }
        buffer.append(contentsOf: data)
        inProgress = true
        return finishIfComplete(limit: limit)
    }

    private mutating func finishIfComplete(limit: (UInt16) -> Int) -> SliceOutcome {
        if expected == 4 && buffer.count >= 4 {
            let length = Int(buffer[0]) | Int(buffer[1]) << 8
            let cid = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
            let maximum = min(limit(cid), maximumPDULength)
            if length > maximum {
                let received = buffer.count - 4
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                guard received <= length else {
                    discardedPartialPDUs += 1
                    return .dropped("fragments hold more bytes than the L2CAP length says")
                }
                discarding = length - received
                return .oversized(channelID: cid, length: length, maximum: maximum, head: [])
            }
            expected = length + 4
            if buffer.count > expected {
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                discardedPartialPDUs += 1
                return .dropped("fragments hold more bytes than the L2CAP length says")
            }
        }
        guard buffer.count == expected, expected >= 4 else { return .incomplete }
        let cid = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
        // The buffer is emptied by the next start fragment, when the view was likely released.
        inProgress = false
        return .complete(channelID: cid, payload: buffer[4...])
    }

    /// Bytes the reassembly buffer holds room for: at most the largest PDU taken so far.
    package var bufferCapacity: Int { buffer.capacity }
    /// Bytes of the partial PDU held now.
    package var bufferedBytes: Int { buffer.count }

    /// Drops the partial PDU in progress, if any, counting it, and says what was lost (for the
    /// log); nil when none was. A refused PDU whose continuations are still being discarded
    /// was reported when it was refused and stays refused.
    ///
    ///     if let why = reassembler.discardPartial() { log("disconnected while \(why)") }
    public mutating func discardPartial() -> String? {
        guard inProgress else { return nil }
        let why = expected == 4
            ? "\(buffer.count) of the 4 bytes of an L2CAP basic header were pending: partial PDU discarded"
            : "\(buffer.count) of \(expected) bytes were pending: partial PDU discarded"
        buffer.removeAll(keepingCapacity: true)
        inProgress = false
        expected = 0
        discardedPartialPDUs += 1
        return why
    }
}

/// Splits an L2CAP basic-mode PDU into ACL fragments of at most `fragmentSize` bytes.
package enum ACLFragmenter {
    /// The fragments for `payload` on channel `channelID`, first one flagged as a start.
    package static func fragments(handle: UInt16, channelID: UInt16, payload: [UInt8], fragmentSize: Int) -> [ACLDataPacket] {
        var pdu: [UInt8] = []
        pdu.reserveCapacity(payload.count + 4)
        pdu.appendLE(UInt16(truncatingIfNeeded: payload.count))
        pdu.appendLE(channelID)
        pdu.append(contentsOf: payload)
        return fragments(handle: handle, pdu: pdu, fragmentSize: fragmentSize)
    }

    /// The fragments of a whole L2CAP PDU (basic header included), first one flagged as a start.
    package static func fragments(handle: UInt16, pdu: [UInt8], fragmentSize: Int) -> [ACLDataPacket] {
        let size = max(1, fragmentSize)
        if pdu.count <= size {
            return [ACLDataPacket(handle: handle, boundary: .firstNonFlushable, data: pdu)]
        }
        var out: [ACLDataPacket] = []
        out.reserveCapacity((pdu.count + size - 1) / size)
        var offset = 0
        while offset < pdu.count {
            let end = min(offset + size, pdu.count)
            out.append(ACLDataPacket(handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing, data: Array(pdu[offset..<end])))
            offset = end
        }
        return out
    }
}
