import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

@Suite struct TransportFramerTests {
    /// Feeds `stream` in chunks of `size` bytes; returns the packets as H4 bytes.
    func frame(_ stream: [UInt8], chunk size: Int) throws -> [[UInt8]] {
        var framer = H4Framer(endpoint: "test")
        var out: [[UInt8]] = []
        var at = 0
        while at < stream.count {
            let end = min(at + size, stream.count)
            try stream[at..<end].withUnsafeBytes { raw in
                try framer.feed(raw) { out.append($0.h4) }
            }
            at = end
        }
        try framer.finish()
        return out
    }

    @Test(arguments: [1, 2, 3, 5, 7, 64, 100_000])
    func everyPacketTypeAtAnyChunkSize(chunk: Int) throws {
        let packets = SpecPackets.all + SpecPackets.all.reversed()
        let stream = packets.flatMap { $0 }
        #expect(try frame(stream, chunk: chunk) == packets)
    }

    @Test func framedPacketsDecodeAsTheSpecSays() throws {
        var framer = H4Framer(endpoint: "test")
        var out: [HCIPacket] = []
        let stream = SpecPackets.reset + SpecPackets.resetComplete + SpecPackets.aclReadRequest
        try stream.withUnsafeBytes { raw in try framer.feed(raw) { out.append($0) } }
        #expect(out == [
            .command(HCICommandPacket(opcode: HCIOpcode(ogf: 0x03, ocf: 0x0003))),
            .event(HCIEventPacket(code: 0x0E, parameters: [0x01, 0x03, 0x0C, 0x00])),
            .acl(ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00])),
        ])
        #expect(framer.isAtPacketBoundary)
        #expect(framer.streamOffset == stream.count)
    }

    /// Every packet of a real capture, concatenated as an H4 stream, comes back byte for byte.
    @Test(arguments: [1, 13, 4096])
    func realCaptureStream(chunk: Int) throws {
        let capture = try BTSnoopReader(bytes: fixtureBytes("captures/real/cnrd__yeelock.btsnoop"))
        let packets = capture.records.map(\.packet.h4)
        #expect(packets.count == 690)
        #expect(try frame(packets.flatMap { $0 }, chunk: chunk) == packets)
    }

    @Test func unknownIndicatorStopsTheStream() throws {
        var framer = H4Framer(endpoint: "serial:/dev/ttyUSB0@115200")
        var out: [[UInt8]] = []
        let stream = SpecPackets.reset + [0x06, 0x00, 0x00]
        let error = #expect(throws: TransportError.self) {
            try stream.withUnsafeBytes { raw in try framer.feed(raw) { out.append($0.h4) } }
        }
        #expect(out == [SpecPackets.reset])
        #expect(error == .malformedStream(endpoint: "serial:/dev/ttyUSB0@115200",
                                          detail: "unknown packet indicator 0x06 at byte 4 of the stream (expected 0x01-0x05)"))
        #expect(error?.description == "transport serial:/dev/ttyUSB0@115200 sent bytes that are not H4: unknown packet indicator 0x06 at byte 4 of the stream (expected 0x01-0x05); check the baud rate and that the device speaks H4")
        // No resynchronisation: a later valid packet does not restart the framer.
        #expect(throws: TransportError.self) {
            try SpecPackets.reset.withUnsafeBytes { raw in try framer.feed(raw) { out.append($0.h4) } }
        }
        #expect(out.count == 1)
    }

    @Test func garbageIndicatorInALaterChunk() throws {
        var framer = H4Framer(endpoint: "t")
        var count = 0
        try SpecPackets.resetComplete.withUnsafeBytes { raw in try framer.feed(raw) { _ in count += 1 } }
        let error = #expect(throws: TransportError.self) {
            try [UInt8]([0xFF]).withUnsafeBytes { raw in try framer.feed(raw) { _ in count += 1 } }
        }
        #expect(count == 1)
        #expect(error == .malformedStream(endpoint: "t", detail: "unknown packet indicator 0xFF at byte 7 of the stream (expected 0x01-0x05)"))
    }

    @Test func streamCutInsideAPacket() throws {
        var framer = H4Framer(endpoint: "tcp:127.0.0.1:9000")
        var out: [[UInt8]] = []
        let stream = SpecPackets.reset + Array(SpecPackets.resetComplete.prefix(4))
        try stream.withUnsafeBytes { raw in try framer.feed(raw) { out.append($0.h4) } }
        #expect(out == [SpecPackets.reset])
        #expect(!framer.isAtPacketBoundary)
        let error = #expect(throws: TransportError.self) { try framer.finish() }
        #expect(error == .lost(endpoint: "tcp:127.0.0.1:9000", reason: "stream ended in the middle of a packet (4 of 7 bytes)"))
        #expect(error?.description == "transport tcp:127.0.0.1:9000 lost: stream ended in the middle of a packet (4 of 7 bytes)")
    }

    @Test func streamCutInsideAHeader() throws {
        var framer = H4Framer(endpoint: "t")
        try [UInt8]([0x02, 0x40]).withUnsafeBytes { raw in try framer.feed(raw) { _ in } }
        let error = #expect(throws: TransportError.self) { try framer.finish() }
        #expect(error == .lost(endpoint: "t", reason: "stream ended in the middle of a packet (2 bytes of an ACL packet header)"))
    }

    /// A header announcing 65535 bytes with 3 present: nothing is emitted, and the carried
    /// bytes are what arrived, not what the length field claims.
    @Test func hugeLengthFieldCarriesOnlyWhatArrived() throws {
        var framer = H4Framer(endpoint: "t")
        var count = 0
        try [UInt8]([0x02, 0x01, 0x00, 0xFF, 0xFF, 0xAA, 0xBB, 0xCC]).withUnsafeBytes { raw in
            try framer.feed(raw) { _ in count += 1 }
        }
        #expect(count == 0)
        let error = #expect(throws: TransportError.self) { try framer.finish() }
        #expect(error == .lost(endpoint: "t", reason: "stream ended in the middle of a packet (8 of 65540 bytes)"))
    }

    @Test func maximumSizeACLPacket() throws {
        let payload = (0..<65535).map { UInt8(truncatingIfNeeded: $0) }
        let packet: [UInt8] = [0x02, 0x01, 0x20, 0xFF, 0xFF] + payload
        let out = try frame(packet + SpecPackets.resetComplete, chunk: 1000)
        #expect(out == [packet, SpecPackets.resetComplete])
    }
}
