/// Rebuilds L2CAP basic-mode PDUs from the ACL fragments of one connection
/// (Core Spec Vol 3, Part A, 7.2 and Vol 4, Part E, 5.4.2).
///
/// A start fragment begins a PDU whose total size comes from the L2CAP length field; continuation
/// fragments append until it is complete. Bounded: a PDU can never grow past
/// `maximumPDULength` + 4 bytes. A start fragment arriving mid-PDU drops the partial PDU and
/// starts over; a continuation with no PDU in progress is dropped. Both are reported.
///
///     var r = ACLReassembler()
///     switch r.push(aclPacket) { case .complete(let cid, let payload): ... default: break }
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

    /// Largest L2CAP information payload accepted (the L2CAP length field is 16 bits).
    public let maximumPDULength: Int
    private var buffer: [UInt8] = []
    private var expected = 0
    public private(set) var inProgress = false

    public init(maximumPDULength: Int = 65_535) {
        self.maximumPDULength = maximumPDULength
    }

    public mutating func push(_ packet: ACLDataPacket) -> Outcome {
        switch packet.boundary {
        case .firstFlushable, .firstNonFlushable, .complete:
            let reset = inProgress
            let partial = buffer.count
            buffer.removeAll(keepingCapacity: true)
            inProgress = false
            let outcome = start(packet.data)
            if reset, case .incomplete = outcome {
                return .dropped("start fragment while \(partial) of \(expected) bytes were pending: partial PDU discarded")
            }
            return outcome
        case .continuing:
            guard inProgress else {
                return .dropped("continuation fragment (\(packet.data.count) bytes) with no PDU in progress")
            }
            guard buffer.count + packet.data.count <= expected else {
                let over = buffer.count + packet.data.count - expected
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                return .dropped("continuation overruns the L2CAP length by \(over) bytes: PDU discarded")
            }
            buffer.append(contentsOf: packet.data)
            return finishIfComplete()
        }
    }

    private mutating func start(_ data: [UInt8]) -> Outcome {
        // Fast path: a whole PDU in one fragment (the common notification case).
        if data.count >= 4 {
            let length = Int(data[0]) | Int(data[1]) << 8
            let cid = UInt16(data[2]) | UInt16(data[3]) << 8
            if length > maximumPDULength {
                return .dropped("L2CAP length \(length) exceeds the maximum \(maximumPDULength)")
            }
            if data.count == length + 4 {
                return .complete(channelID: cid, payload: Array(data[4...]))
            }
            if data.count > length + 4 {
                return .dropped("start fragment holds \(data.count - 4) bytes but the L2CAP length says \(length)")
            }
            expected = length + 4
        } else {
            // The basic header itself is split; its length is known once 2 bytes arrive.
            expected = 4
        }
        buffer.append(contentsOf: data)
        inProgress = true
        return finishIfComplete()
    }

    private mutating func finishIfComplete() -> Outcome {
        if expected == 4 && buffer.count >= 2 {
            let length = Int(buffer[0]) | Int(buffer[1]) << 8
            if length > maximumPDULength {
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                return .dropped("L2CAP length \(length) exceeds the maximum \(maximumPDULength)")
            }
            expected = length + 4
            if buffer.count > expected {
                buffer.removeAll(keepingCapacity: true)
                inProgress = false
                return .dropped("fragments hold more bytes than the L2CAP length says")
            }
        }
        guard buffer.count == expected, expected >= 4 else { return .incomplete }
        let cid = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
        let payload = Array(buffer[4...])
        buffer.removeAll(keepingCapacity: true)
        inProgress = false
        return .complete(channelID: cid, payload: payload)
    }

    /// Drops any partial PDU (on disconnect).
    public mutating func reset() {
        buffer.removeAll()
        inProgress = false
        expected = 0
    }
}

/// Splits an L2CAP basic-mode PDU into ACL fragments of at most `fragmentSize` bytes.
public enum ACLFragmenter {
    /// The fragments for `payload` on channel `channelID`, first one flagged as a start.
    public static func fragments(handle: UInt16, channelID: UInt16, payload: [UInt8], fragmentSize: Int) -> [ACLDataPacket] {
        var pdu: [UInt8] = []
        pdu.reserveCapacity(payload.count + 4)
        pdu.appendLE(UInt16(truncatingIfNeeded: payload.count))
        pdu.appendLE(channelID)
        pdu.append(contentsOf: payload)
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
