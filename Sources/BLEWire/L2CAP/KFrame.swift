/// Why a K-frame (the information frame of a credit-based channel) cannot be taken. Any of
/// these closes the channel it arrived on (Core Spec 5.4 Vol 3, Part A, 3.4.3 and 10.1);
/// the link and its other channels go on.
public enum KFrameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The information payload is longer than the MPS this side announced.
    case exceedsMPS(size: Int, mps: Int)
    /// The first K-frame of an SDU is shorter than its 2-octet SDU Length field.
    case missingSDULength(size: Int)
    /// The SDU Length field announces more than the MTU this side announced.
    case exceedsMTU(sduLength: Int, mtu: Int)
    /// The K-frames carry more data than their SDU Length announced (a short SDU Length, or a
    /// second SDU Length inside the same SDU).
    case sduOverrun(sduLength: Int, received: Int)
    /// A K-frame arrived while the peer held no credit for it.
    case noCredit
    /// A Flow Control Credit Indication took the peer's credit count past 65535.
    case creditOverflow(credits: Int)

    public var description: String {
        switch self {
        case .exceedsMPS(let size, let mps): return "a \(size)-byte K-frame exceeds the MPS of \(mps) bytes announced to the peer"
        case .missingSDULength(let size): return "the first K-frame of an SDU has \(size) byte(s), too short for its SDU Length field"
        case .exceedsMTU(let length, let mtu): return "SDU Length \(length) exceeds the MTU of \(mtu) bytes announced to the peer"
        case .sduOverrun(let length, let received): return "K-frames carried \(received) bytes for an SDU Length of \(length) (a short SDU Length or a second one)"
        case .noCredit: return "the peer sent a K-frame without a credit"
        case .creditOverflow(let credits): return "a credit indication took the peer's credits to \(credits), past 65535"
        }
    }
}

/// Splits SDUs into K-frame information payloads no longer than the peer's MPS; the first one
/// starts with the 2-octet SDU Length (Vol 3, Part A, 3.4.2 and 7.3).
///
///     for payload in KFrameSegmenter.segments(of: sdu, mps: 23) { send(payload) }
///
/// `@usableFromInline` so that `frameCount` inlines into the senders of other modules.
@usableFromInline package enum KFrameSegmenter {
    /// How many K-frames (and so credits) an SDU of `size` bytes takes at `mps`.
    @inlinable
    public static func frameCount(sduSize size: Int, mps: Int) -> Int {
        let mps = max(3, mps)
        return (size + 2 + mps - 1) / mps
    }

    /// The information payloads of the K-frames of `sdu` (`mps` at least 3, as the spec's
    /// minimum of 23 always is).
    public static func segments(of sdu: [UInt8], mps: Int) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        frames.reserveCapacity(frameCount(sduSize: sdu.count, mps: mps))
        var offset = 0
        repeat {
            let range = data(sduSize: sdu.count, from: offset, mps: mps)
            if offset == 0 {
                var first: [UInt8] = []
                first.reserveCapacity(range.count + 2)
                first.appendLE(UInt16(truncatingIfNeeded: sdu.count))
                first.append(contentsOf: sdu[range])
                frames.append(first)
            } else {
                frames.append(Array(sdu[range]))
            }
            offset = range.upperBound
        } while offset < sdu.count
        return frames
    }

    /// The bytes of the SDU that its K-frame starting at `offset` carries: the first one
    /// (offset 0) leaves room for the SDU Length.
    package static func data(sduSize: Int, from offset: Int, mps: Int) -> Range<Int> {
        let room = max(3, mps) - (offset == 0 ? 2 : 0)
        return offset..<min(sduSize, offset + room)
    }

    /// The whole L2CAP PDU of the K-frame of `sdu` starting at `offset`, in one allocation:
    /// the basic header for `channelID`, the SDU Length in the first K-frame, then the data.
    /// Returns the PDU and the offset of the next K-frame (the SDU's size after the last).
    ///
    ///     var offset = 0
    ///     repeat { let (pdu, end) = KFrameSegmenter.pdu(of: sdu, from: offset, mps: 247, channelID: 0x0040); send(pdu); offset = end } while offset < sdu.count
    public static func pdu(of sdu: [UInt8], from offset: Int, mps: Int, channelID: UInt16) -> (pdu: [UInt8], end: Int) {
        let range = data(sduSize: sdu.count, from: offset, mps: mps)
        let header = offset == 0 ? 6 : 4
        let information = range.count + header - 4
        let pdu = [UInt8](unsafeUninitializedCapacity: range.count + header) { out, count in
            out[0] = UInt8(truncatingIfNeeded: information)
            out[1] = UInt8(truncatingIfNeeded: information >> 8)
            out[2] = UInt8(truncatingIfNeeded: channelID)
            out[3] = UInt8(truncatingIfNeeded: channelID >> 8)
            if offset == 0 {
                out[4] = UInt8(truncatingIfNeeded: sdu.count)
                out[5] = UInt8(truncatingIfNeeded: sdu.count >> 8)
            }
            sdu.withUnsafeBufferPointer { source in
                guard let base = source.baseAddress, !range.isEmpty else { return }
                UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[header...])
                    .copyMemory(from: UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count))
            }
            count = range.count + header
        }
        return (pdu, range.upperBound)
    }
}

/// Reassembles SDUs from the K-frames of one channel, with the SDU Length of each SDU's first
/// K-frame (Vol 3, Part A, 3.4.3), bounded by the MTU and MPS this side announced: it never
/// holds more than one MTU and never allocates from a length it has not checked.
///
///     var r = KFrameReassembler(mtu: 512, mps: 247)
///     if let sdu = try r.receive(payload) { deliver(sdu) }
package struct KFrameReassembler: Sendable {
    /// The limits announced to the peer; a reconfiguration (Vol 3, Part A, 4.27) changes them.
    package var mtu: Int
    package var mps: Int
    /// The SDU being reassembled and its announced length, nil between SDUs.
    var expected: Int?
    var buffer: [UInt8] = []
    /// K-frames taken for the SDU being reassembled (its credits, returned when it is consumed).
    package private(set) var framesInSDU = 0

    package init(mtu: Int, mps: Int) {
        self.mtu = mtu
        self.mps = mps
    }

    /// True between SDUs.
    package var isIdle: Bool { expected == nil }

    /// Takes one K-frame information payload; returns the SDU it completes, with the number of
    /// K-frames that carried it. Throws on a malformed K-frame; the reassembler is then idle.
    package mutating func receive(_ payload: ArraySlice<UInt8>) throws(KFrameError) -> (sdu: [UInt8], frames: Int)? {
        let outcome: Result<(sdu: [UInt8], frames: Int)?, KFrameError> = payload.withUnsafeBytes { raw in
            do throws(KFrameError) { return .success(try receive(raw)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }

    /// The same for a payload read in place (valid only during the call).
    package mutating func receive(_ payload: UnsafeRawBufferPointer) throws(KFrameError) -> (sdu: [UInt8], frames: Int)? {
        guard payload.count <= mps else {
            reset()
            throw .exceedsMPS(size: payload.count, mps: mps)
        }
        var data = payload
        if expected == nil {
            guard payload.count >= 2 else {
                reset()
                throw .missingSDULength(size: payload.count)
            }
            let length = Int(payload[0]) | Int(payload[1]) << 8
            guard length <= mtu else {
                reset()
                throw .exceedsMTU(sduLength: length, mtu: mtu)
            }
            data = UnsafeRawBufferPointer(rebasing: payload[2...])
            if data.count == length {
                // The whole SDU in one K-frame: copied out once, the buffer untouched.
                return (Array(data), 1)
            }
            expected = length
            buffer.removeAll(keepingCapacity: true)
            buffer.reserveCapacity(length)
        }
        framesInSDU += 1
        let length = expected ?? 0
        guard buffer.count + data.count <= length else {
            let received = buffer.count + data.count
            reset()
            throw .sduOverrun(sduLength: length, received: received)
        }
        buffer.append(contentsOf: data)
        guard buffer.count == length else { return nil }
        let sdu = buffer
        let frames = framesInSDU
        buffer = []
        expected = nil
        framesInSDU = 0
        return (sdu, frames)
    }

    package mutating func reset() {
        expected = nil
        buffer = []
        framesInSDU = 0
    }
}

/// The credits of one credit-based channel in both directions (Vol 3, Part A, 10.1): the
/// K-frames this side may still send, and the K-frames the peer may still send.
///
///     var flow = CreditBasedFlow(sendCredits: 5, receiveCredits: 10)
///     try flow.received()            // a K-frame arrived
///     let back = flow.grant(2)       // credits to return in a Flow Control Credit Indication
///
/// `@usableFromInline` with `@inlinable` members: the channels of BLECore count every K-frame
/// here, and a `package` type without it is called out of line from other modules (Swift 6.3).
@usableFromInline package struct CreditBasedFlow: Hashable, Sendable {
    /// K-frames this side may send now.
    @usableFromInline package internal(set) var sendCredits: Int
    /// K-frames the peer may send now (granted and not used).
    @usableFromInline package internal(set) var receiveCredits: Int

    @inlinable
    package init(sendCredits: Int, receiveCredits: Int) {
        self.sendCredits = sendCredits
        self.receiveCredits = receiveCredits
    }

    /// A Flow Control Credit Indication from the peer: more credits to send with.
    @inlinable
    package mutating func peerGranted(_ credits: Int) throws(KFrameError) {
        let total = sendCredits + credits
        guard total <= 65535 else { throw .creditOverflow(credits: total) }
        sendCredits = total
    }

    /// Takes every send credit (lent to senders off the executor); `restoreSendCredits` gives
    /// back those not used.
    @inlinable
    package mutating func lendSendCredits() -> Int {
        defer { sendCredits = 0 }
        return sendCredits
    }

    /// Send credits that were lent and not used.
    @inlinable
    package mutating func restoreSendCredits(_ credits: Int) {
        sendCredits += credits
    }

    /// Uses one credit to send a K-frame; false when none is left (do not send).
    @inlinable
    package mutating func takeSendCredit() -> Bool {
        guard sendCredits > 0 else { return false }
        sendCredits -= 1
        return true
    }

    /// A K-frame arrived: it uses one of the peer's credits.
    @inlinable
    package mutating func received() throws(KFrameError) {
        guard receiveCredits > 0 else { throw .noCredit }
        receiveCredits -= 1
    }

    /// Gives the peer `credits` more (as the application consumes what arrived); returns the
    /// number to put in the Flow Control Credit Indication (0: send none).
    @inlinable
    package mutating func grant(_ credits: Int) -> Int {
        let n = max(0, min(credits, 65535 - receiveCredits))
        receiveCredits += n
        return n
    }
}
