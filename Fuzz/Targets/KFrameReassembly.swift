import BLEWire

/// K-frame reassembly and the credit state machine of an LE credit-based channel (Vol 3,
/// Part A, 3.4.3 and 10.1). Input: MTU and MPS selectors, the initial credits, then
/// operations: 0 a K-frame (a length byte and its data), 1 a credit indication (u16), 2 send
/// one K-frame, 3 credit back (u8); the bytes left at the end become one SDU for a
/// segmentation round trip. Properties:
/// - a completed SDU is never longer than the MTU, and a K-frame over the MPS never passes;
/// - credits stay within 0...65535 both ways; a K-frame is taken only with a credit;
/// - from any state, after reset, `KFrameSegmenter`'s frames of an SDU reassemble to it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mtu = [23, 64, 512, 2048, 65_535][Int(input.u8() % 5)]
    let mps = [23, 24, 100, 247][Int(input.u8() % 4)]
    var reassembler = KFrameReassembler(mtu: mtu, mps: mps)
    var flow = CreditBasedFlow(sendCredits: Int(input.u8()), receiveCredits: Int(input.u8()))

    let operations = Int(input.u8() % 32)
    for _ in 0..<operations where !input.isAtEnd {
        switch input.u8() % 4 {
        case 0:
            let frame = input.take(Int(input.u8()))
            let before = flow.receiveCredits
            do {
                try flow.received()
                fuzzCheck(before > 0, "K-frame taken without a credit")
            } catch {
                fuzzCheck(before == 0 && error == .noCredit, "credit check failed with \(before) credits: \(error)")
                continue
            }
            do {
                if let done = try reassembler.receive(frame[...]) {
                    fuzzCheck(done.sdu.count <= mtu && done.frames >= 1, "SDU of \(done.sdu.count) bytes over MTU \(mtu)")
                }
                fuzzCheck(frame.count <= mps, "K-frame of \(frame.count) bytes over MPS \(mps) accepted")
            } catch {
                fuzzCheck(reassembler.isIdle, "reassembler not idle after \(error)")
            }
        case 1:
            let credits = Int(input.u16())
            let before = flow.sendCredits
            do {
                try flow.peerGranted(credits)
                fuzzCheck(flow.sendCredits == before + credits, "credits lost")
            } catch {
                fuzzCheck(before + credits > 65535 && flow.sendCredits == before, "credit overflow mishandled")
            }
        case 2:
            let before = flow.sendCredits
            let sent = flow.takeSendCredit()
            fuzzCheck(sent == (before > 0) && flow.sendCredits == max(0, before - 1), "send credit accounting broken")
        default:
            let before = flow.receiveCredits
            let granted = flow.grant(Int(input.u8()))
            fuzzCheck(granted >= 0 && flow.receiveCredits == before + granted && flow.receiveCredits <= 65535, "grant accounting broken")
        }
        fuzzCheck((0...65535).contains(flow.sendCredits) && (0...65535).contains(flow.receiveCredits), "credits out of range")
    }

    reassembler.reset()
    let sdu = Array(input.rest().prefix(mtu))
    let frames = KFrameSegmenter.segments(of: sdu, mps: mps)
    fuzzCheck(frames.count == KFrameSegmenter.frameCount(sduSize: sdu.count, mps: mps), "frame count differs")
    var offset = 0
    for (i, frame) in frames.enumerated() {
        fuzzCheck(frame.count <= mps, "segment over the MPS")
        // The K-frame the channel sends, built in place, is the same segment behind its basic header.
        let (pdu, end) = KFrameSegmenter.pdu(of: sdu, from: offset, mps: mps, channelID: 0x0040)
        fuzzCheck(pdu == [UInt8(frame.count & 0xFF), UInt8(frame.count >> 8), 0x40, 0x00] + frame, "in-place K-frame \(i) differs")
        offset = end
        do {
            let done = try reassembler.receive(frame[...])
            fuzzCheck((done != nil) == (i == frames.count - 1), "SDU completed at frame \(i) of \(frames.count)")
            if let done { fuzzCheck(done.sdu == sdu && done.frames == frames.count, "reassembled SDU differs") }
        } catch {
            fuzzCheck(false, "segmenter output rejected: \(error)")
        }
    }
    return 0
}
