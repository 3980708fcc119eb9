import Testing
@testable import BLECore
import BLETestSupport
import BLEWire

/// The byte-stream view of a credit-based channel (`L2CAPByteReader`, `L2CAPByteWriter`)
/// through the virtual controller, the test playing the peer's L2CAP. K-frames are built by
/// hand from Core Spec 5.4 Vol 3, Part A, 3.4.3: the first K-frame of an SDU starts with the
/// 2-octet SDU Length, little endian.
@Suite(.timeLimit(.minutes(1)))
struct L2CAPByteStreamTests {
    static let dcid = CreditBasedChannelTests.dcid

    /// Sends one SDU to the host as K-frames of at most `mps` octets.
    static func sendSDU(_ vc: VirtualController, _ sdu: [UInt8], mps: Int = 23) throws {
        let framed = [UInt8(sdu.count & 0xFF), UInt8(sdu.count >> 8)] + sdu
        var offset = 0
        repeat {
            let end = min(offset + mps, framed.count)
            try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: Array(framed[offset..<end]))
            offset = end
        } while offset < framed.count
    }

    /// The SDUs the host sent to the peer, cut at the SDU Length of each first K-frame.
    static func sdusSent(_ vc: VirtualController) -> [[UInt8]] {
        var sdus: [[UInt8]] = [], current: [UInt8] = [], length = -1
        for frame in vc.l2capReceived where frame.channelID == dcid {
            var payload = frame.payload[...]
            if length < 0 {
                length = Int(payload[payload.startIndex]) | Int(payload[payload.startIndex + 1]) << 8
                payload = payload.dropFirst(2)
            }
            current += payload
            if current.count == length {
                sdus.append(current)
                current = []
                length = -1
            }
        }
        return sdus
    }

    @Test func readerCrossesSDUBoundsAndEndsWithTheChannel() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, mtu: 512, mps: 23, credits: 16)
        try Self.sendSDU(vc, [1, 2, 3])
        try Self.sendSDU(vc, [])                                      // an empty SDU: skipped
        try Self.sendSDU(vc, Array(4...40))                           // two K-frames
        try Self.sendSDU(vc, [41, 42, 43])
        // 4.6: the peer closes the channel (DCID 0x0040 is ours, SCID the peer's).
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 9, body: .disconnectionRequest(destinationCID: 0x0040, sourceCID: Self.dcid)))
        var reader = channel.bytes.makeAsyncIterator()
        #expect(try await reader.read(upTo: 2) == [1, 2])
        #expect(reader.buffered == 1)
        #expect(try await reader.read(upTo: 10) == [3])
        #expect(try await reader.read(upTo: 100) == Array(4...40))   // a whole SDU, past the empty one
        #expect(try await reader.next() == 41)
        #expect(try await reader.read(upTo: 0) == [])
        #expect(try await reader.read(upTo: 5) == [42, 43])
        #expect(try await reader.read(upTo: 5) == nil)
        #expect(try await reader.next() == nil)
    }

    @Test func bytesAsASequence() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, mtu: 512, mps: 23, credits: 16)
        let sdus: [[UInt8]] = [[0x10], [], Array(0x20...0x50), [0x60, 0x61]]
        for sdu in sdus { try Self.sendSDU(vc, sdu) }
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: 9, body: .disconnectionRequest(destinationCID: 0x0040, sourceCID: Self.dcid)))
        var all: [UInt8] = []
        for try await byte in channel.bytes { all.append(byte) }
        #expect(all == Array(sdus.joined()))
    }

    @Test func readTimesOutLikeReceive() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection)
        let reading = Task {
            var reader = L2CAPByteReader(channel)
            return try await reader.read(upTo: 10, timeout: .seconds(3))
        }
        // The read is parked (its timeout scheduled) before virtual time moves.
        try await channel.receivers.waitForCount("the read waiting") { $0 == 1 }
        await vc.advance(by: .seconds(3))
        await #expect(throws: L2CAPChannelError.receiveTimeout(peer: "\(VC.peer.address)", cid: 0x0040, after: .seconds(3))) { try await reading.value }
    }

    @Test func writerCutsAtThePeersMTU() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // Peer MTU 256, MPS 23, enough credits for everything.
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 256, peerMPS: 23, peerCredits: 200)
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try await channel.byteWriter.write(data)
        try await channel.byteWriter.write([])                       // nothing to send
        await vc.settle()
        let sdus = Self.sdusSent(vc)
        #expect(sdus.map(\.count) == [256, 256, 88])
        #expect(Array(sdus.joined()) == data)
        #expect(vc.l2capReceived.filter { $0.channelID == Self.dcid }.allSatisfy { $0.payload.count <= 23 })
    }

    @Test func writerWithASmallerSDUSize() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let (channel, _) = try await CreditBasedChannelTests.open(vc, connection, peerMTU: 256, peerMPS: 100, peerCredits: 20)
        let data = (0..<100).map { UInt8($0) }
        try await L2CAPByteWriter(channel, maximumSDUSize: 40).write(data)
        await vc.settle()
        let sdus = Self.sdusSent(vc)
        #expect(sdus.map(\.count) == [40, 40, 20])
        #expect(Array(sdus.joined()) == data)
    }
}
