import Testing
import BLECore
import BLEWire

/// The credit-based signaling commands in the layouts of Core Spec 5.4 Vol 3, Part A,
/// 4.22-4.28, and K-frames (3.4.2-3.4.3) with their credits (10.1).
@Suite struct CreditBasedCodecTests {
    static let cases: [(String, [UInt8], L2CAPSignalingCommand.Body)] = [
        // 4.22: code 0x14, id 1, length 10, SPSM 0x0080, Source CID 0x0040, MTU 512, MPS 247, credits 8.
        ("LE Credit Based Connection Request", [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0xF7, 0x00, 0x08, 0x00],
         .leCreditBasedConnectionRequest(psm: 0x0080, sourceCID: 0x0040, mtu: 512, mps: 247, initialCredits: 8)),
        // 4.23: code 0x15, length 10, DCID 0x0041, MTU 23, MPS 23, credits 1, result 0x0000.
        ("LE Credit Based Connection Response", [0x15, 0x01, 0x0A, 0x00, 0x41, 0x00, 0x17, 0x00, 0x17, 0x00, 0x01, 0x00, 0x00, 0x00],
         .leCreditBasedConnectionResponse(destinationCID: 0x0041, mtu: 23, mps: 23, initialCredits: 1, result: 0)),
        // 4.24: code 0x16, length 4, CID 0x0040, credits 0x0102.
        ("Flow Control Credit Indication", [0x16, 0x02, 0x04, 0x00, 0x40, 0x00, 0x02, 0x01],
         .flowControlCreditIndication(cid: 0x0040, credits: 0x0102)),
        // 4.25: code 0x17, length 8 + 2 x 2, SPSM 0x0027, MTU 64, MPS 64, credits 5, SCIDs 0x0040 0x0041.
        ("Credit Based Connection Request", [0x17, 0x03, 0x0C, 0x00, 0x27, 0x00, 0x40, 0x00, 0x40, 0x00, 0x05, 0x00, 0x40, 0x00, 0x41, 0x00],
         .creditBasedConnectionRequest(psm: 0x0027, mtu: 64, mps: 64, initialCredits: 5, sourceCIDs: [0x0040, 0x0041])),
        // 4.26: code 0x18, MTU 64, MPS 64, credits 5, result 0x0004 (some refused), DCIDs 0x0050 0x0000.
        ("Credit Based Connection Response", [0x18, 0x03, 0x0C, 0x00, 0x40, 0x00, 0x40, 0x00, 0x05, 0x00, 0x04, 0x00, 0x50, 0x00, 0x00, 0x00],
         .creditBasedConnectionResponse(mtu: 64, mps: 64, initialCredits: 5, result: 4, destinationCIDs: [0x0050, 0x0000])),
        // 4.27: code 0x19, MTU 100, MPS 80, DCID 0x0050.
        ("Credit Based Reconfigure Request", [0x19, 0x04, 0x06, 0x00, 0x64, 0x00, 0x50, 0x00, 0x50, 0x00],
         .creditBasedReconfigureRequest(mtu: 100, mps: 80, destinationCIDs: [0x0050])),
        // 4.28: code 0x1A, result 0x0001 (reduction of MTU not allowed).
        ("Credit Based Reconfigure Response", [0x1A, 0x04, 0x02, 0x00, 0x01, 0x00], .creditBasedReconfigureResponse(result: 1)),
    ]

    @Test(arguments: 0..<7) func decodesAndReencodes(_ index: Int) throws {
        let (name, bytes, body) = Self.cases[index]
        let command = try L2CAPSignalingCommand(bytes: bytes)
        #expect(command.body == body, "\(name)")
        #expect(command.identifier == bytes[1])
        #expect(command.code == bytes[0])
        #expect(command.bytes == bytes, "\(name)")
    }

    @Test func malformedCommandsAreTypedErrors() {
        // LE request one byte short (length field says 9).
        #expect(throws: DecodeError.self) { try L2CAPSignalingCommand(bytes: [0x14, 0x01, 0x09, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0xF7, 0x00, 0x08]) }
        // An odd CID list.
        #expect(throws: DecodeError.malformed(what: "L2CAP credit based command", detail: "CID list of 3 bytes is not a whole number of CIDs")) {
            try L2CAPSignalingCommand(bytes: [0x17, 0x01, 0x0B, 0x00, 0x27, 0x00, 0x40, 0x00, 0x40, 0x00, 0x05, 0x00, 0x40, 0x00, 0x41])
        }
        // Six source CIDs: more than the five allowed.
        #expect(throws: DecodeError.invalidValue(what: "L2CAP credit based command", field: "number of CIDs", value: 6)) {
            try L2CAPSignalingCommand(bytes: [0x17, 0x01, 0x14, 0x00, 0x27, 0x00, 0x40, 0x00, 0x40, 0x00, 0x05, 0x00] + (0..<6).flatMap { [UInt8(0x40 + $0), 0x00] })
        }
        // Reconfigure without a CID.
        #expect(throws: DecodeError.self) { try L2CAPSignalingCommand(bytes: [0x19, 0x01, 0x04, 0x00, 0x64, 0x00, 0x50, 0x00]) }
    }

    @Test func resultCodes() {
        #expect(CreditBasedConnectionResult(rawValue: 0x0002) == .psmNotSupported)
        #expect(CreditBasedConnectionResult(rawValue: 0x0005) == .insufficientAuthentication)
        #expect(CreditBasedConnectionResult(rawValue: 0x0007) == .insufficientEncryptionKeySize)
        #expect(CreditBasedConnectionResult(rawValue: 0x0008) == .insufficientEncryption)
        #expect(CreditBasedConnectionResult(rawValue: 0x0009) == .invalidSourceCID)
        #expect(CreditBasedConnectionResult(rawValue: 0x0004).description == "refused, no resources available (0x0004)")
        #expect(CreditBasedConnectionResult(rawValue: 0x00F0) == .other(0x00F0))
    }

    @Test func sduIsSegmentedByMPSWithTheSDULengthFirst() {
        let sdu = (0..<100).map { UInt8($0) }
        let frames = KFrameSegmenter.segments(of: sdu, mps: 23)
        // 2 + 100 octets over an MPS of 23: 23 + 23 + 23 + 23 + 10, the first carrying SDU Length 100.
        #expect(frames.map(\.count) == [23, 23, 23, 23, 10])
        #expect(Array(frames[0].prefix(2)) == [0x64, 0x00])
        #expect(Array(frames.joined().dropFirst(2)) == sdu)
        #expect(KFrameSegmenter.frameCount(sduSize: 100, mps: 23) == 5)
        #expect(KFrameSegmenter.segments(of: [], mps: 23) == [[0x00, 0x00]])
    }

    @Test func kFramePDUsAreBuiltInPlace() {
        let sdu = (0..<30).map { UInt8($0) }
        // 3.4.2: L2CAP length 23 (SDU Length + 21 octets), CID 0x0050, SDU Length 30; then 9 octets.
        let first = KFrameSegmenter.pdu(of: sdu, from: 0, mps: 23, channelID: 0x0050)
        #expect(first.pdu == [0x17, 0x00, 0x50, 0x00, 0x1E, 0x00] + sdu[0..<21] && first.end == 21)
        let second = KFrameSegmenter.pdu(of: sdu, from: 21, mps: 23, channelID: 0x0050)
        #expect(second.pdu == [0x09, 0x00, 0x50, 0x00] + sdu[21...] && second.end == 30)
        // An empty SDU is one K-frame with SDU Length 0.
        let empty = KFrameSegmenter.pdu(of: [], from: 0, mps: 23, channelID: 0x0041)
        #expect(empty.pdu == [0x02, 0x00, 0x41, 0x00, 0x00, 0x00] && empty.end == 0)
    }

    @Test func singleKFrameSDUsAndLongerOnesInTurn() throws {
        var r = KFrameReassembler(mtu: 100, mps: 23)
        #expect(try r.receive([0x02, 0x00, 0xAA, 0xBB])?.sdu == [0xAA, 0xBB])
        #expect(try r.receive([0x19, 0x00] + [UInt8](repeating: 1, count: 21)) == nil)
        #expect(try r.receive([0x02, 0x00, 0x03, 0x04])?.sdu == [UInt8](repeating: 1, count: 21) + [0x02, 0x00, 0x03, 0x04])
        #expect(try r.receive([0x00, 0x00])?.sdu == [])
        #expect(r.isIdle && r.framesInSDU == 0)
    }

    @Test func reassemblyRoundTrip() throws {
        var r = KFrameReassembler(mtu: 65535, mps: 23)
        let sdu = (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var out: [(sdu: [UInt8], frames: Int)] = []
        for frame in KFrameSegmenter.segments(of: sdu, mps: 23) + KFrameSegmenter.segments(of: [9], mps: 23) {
            if let done = try r.receive(frame[...]) { out.append(done) }
        }
        #expect(out.map(\.sdu) == [sdu, [9]])
        #expect(out.map(\.frames) == [KFrameSegmenter.frameCount(sduSize: 5000, mps: 23), 1])
        #expect(r.isIdle)
    }

    @Test func malformedKFramesAreTypedErrors() throws {
        var r = KFrameReassembler(mtu: 100, mps: 23)
        // SDU Length 2 but three data octets.
        #expect(throws: KFrameError.sduOverrun(sduLength: 2, received: 3)) { try r.receive([0x02, 0x00, 1, 2, 3]) }
        // A second SDU Length inside an SDU of 5: the second frame's 4 octets overrun it.
        #expect(throws: KFrameError.sduOverrun(sduLength: 5, received: 6)) {
            _ = try r.receive([0x05, 0x00, 1, 2])
            _ = try r.receive([0x05, 0x00, 3, 4])
        }
        #expect(throws: KFrameError.exceedsMTU(sduLength: 512, mtu: 100)) { try r.receive([0x00, 0x02, 1]) }
        #expect(throws: KFrameError.exceedsMPS(size: 24, mps: 23)) { try r.receive(Array(repeating: 0, count: 24)[...]) }
        #expect(throws: KFrameError.missingSDULength(size: 1)) { try r.receive([0x05]) }
        // After each error the reassembler starts a new SDU.
        let next = try r.receive([0x01, 0x00, 0x2A])
        #expect(next?.sdu == [0x2A])
    }

    @Test func creditsBothWays() throws {
        var flow = CreditBasedFlow(sendCredits: 1, receiveCredits: 1)
        let first = flow.takeSendCredit(), second = flow.takeSendCredit()
        #expect(first && !second)
        try flow.peerGranted(2)
        #expect(flow.sendCredits == 2)
        #expect(throws: KFrameError.creditOverflow(credits: 65537)) { try flow.peerGranted(65535) }
        try flow.received()
        #expect(throws: KFrameError.noCredit) { try flow.received() }
        let granted = flow.grant(3), capped = flow.grant(65535)
        #expect(granted == 3 && capped == 65532)
    }
}
