import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Reassembly bounded by what the destination channel accepts, and the log rate limiter.
/// Fragments are L2CAP basic-mode PDUs (Vol 3, Part A, 3.1: length, channel ID, payload) in
/// ACL packets with Packet_Boundary_Flag 0b10 (start) or 0b01 (continuation) (Vol 4, Part E, 5.4.2).
struct ACLReassemblerLimitTests {
    static func start(_ data: [UInt8]) -> ACLDataPacket { ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: data) }
    static func more(_ data: [UInt8]) -> ACLDataPacket { ACLDataPacket(handle: 0x0040, boundary: .continuing, data: data) }
    static func limits(_ cid: UInt16) -> Int { cid == 0x0004 ? 517 : 23 }

    @Test func startAnnouncingMoreThanTheChannelAcceptsIsRefusedAndItsContinuationsDiscarded() {
        var r = ACLReassembler()
        // Length 600 (0x0258) on CID 0x0004: a notification's first 23 bytes.
        let first = [0x58, 0x02, 0x04, 0x00, 0x1B, 0x03, 0x00] + [UInt8](repeating: 0xAA, count: 20)
        #expect(r.receive(Self.start(first), limit: Self.limits) == .oversized(channelID: 0x0004, length: 600, maximum: 517, head: first[4...]))
        #expect(!r.inProgress)
        // The remaining 577 bytes arrive and vanish.
        var left = 600 - 23
        while left > 0 {
            let n = min(27, left)
            #expect(r.receive(Self.more([UInt8](repeating: 0xBB, count: n)), limit: Self.limits) == .incomplete)
            left -= n
        }
        // One more continuation has no PDU in progress.
        guard case .dropped = r.receive(Self.more([0x00]), limit: Self.limits) else { Issue.record("orphan continuation accepted"); return }
        // A signaling command of 24 bytes (MTUsig 23) is refused at once; one of 8 passes.
        #expect(r.receive(Self.start([0x18, 0x00, 0x05, 0x00, 0x12, 0x01, 0x14, 0x00]), limit: Self.limits)
                == .oversized(channelID: 0x0005, length: 24, maximum: 23, head: [0x12, 0x01, 0x14, 0x00][...]))
        let reject: [UInt8] = [0x08, 0x00, 0x05, 0x00, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00]
        #expect(r.receive(Self.start(Array(reject[..<6])), limit: Self.limits) == .incomplete)
        #expect(r.receive(Self.more(Array(reject[6...])), limit: Self.limits) == .complete(channelID: 0x0005, payload: [0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00][...]))
    }

    @Test func everyPartialPDUThrownAwayIsCounted() {
        var r = ACLReassembler()
        #expect(r.discardPartial() == nil)
        // 5 of the 12 bytes of a PDU (length 8 on CID 0x0004), then a start fragment holding a
        // whole PDU (length 1): that PDU comes out, and the partial one is counted.
        #expect(r.receive(Self.start([0x08, 0x00, 0x04, 0x00, 0x1B])) == .incomplete)
        #expect(r.receive(Self.start([0x01, 0x00, 0x04, 0x00, 0x2A])) == .complete(channelID: 0x0004, payload: [0x2A][...]))
        #expect(r.discardedPartialPDUs == 1)
        // A basic header cut after 2 bytes, then the link closes.
        #expect(r.receive(Self.start([0x08, 0x00])) == .incomplete)
        #expect(r.discardPartial() == "2 of the 4 bytes of an L2CAP basic header were pending: partial PDU discarded")
        #expect(r.discardedPartialPDUs == 2)
        #expect(!r.inProgress)
        // A continuation that overruns the L2CAP length (5 + 8 of 12 bytes).
        #expect(r.receive(Self.start([0x08, 0x00, 0x04, 0x00, 0x1B])) == .incomplete)
        #expect(r.receive(Self.more([UInt8](repeating: 0, count: 8))) == .dropped("continuation overruns the L2CAP length by 1 bytes: PDU discarded"))
        #expect(r.discardedPartialPDUs == 3)
        // A continuation with no PDU in progress is a dropped fragment, not a partial PDU.
        #expect(r.receive(Self.more([0x00])) == .dropped("continuation fragment (1 bytes) with no PDU in progress"))
        #expect(r.discardedPartialPDUs == 3)
    }

    @Test func splitBasicHeaderIsSizedOnceItsFourBytesArrive() {
        var r = ACLReassembler()
        // Length 5 on CID 0x0004, the header cut after 2 bytes and the rest in one continuation.
        #expect(r.receive(Self.start([0x05, 0x00]), limit: Self.limits) == .incomplete)
        guard case .complete(0x0004, let payload) = r.receive(Self.more([0x04, 0x00, 1, 2, 3, 4, 5]), limit: Self.limits) else {
            Issue.record("split header not reassembled"); return
        }
        #expect(Array(payload) == [1, 2, 3, 4, 5])
        // Length 600 on CID 0x0004 with a split header: refused when the header is whole.
        #expect(r.receive(Self.start([0x58, 0x02]), limit: Self.limits) == .incomplete)
        #expect(r.receive(Self.more([0x04, 0x00, 0x1B]), limit: Self.limits) == .oversized(channelID: 0x0004, length: 600, maximum: 517, head: []))
        #expect(r.receive(Self.more([UInt8](repeating: 0, count: 599)), limit: Self.limits) == .incomplete)
    }

    @Test func rateLimiterLetsOneLinePerIntervalAndCountsTheRest() {
        var limiter = LogRateLimiter<String>(interval: .seconds(10))
        let t0 = ContinuousClock.Instant.now
        #expect(limiter.admit("a", now: t0) == 0)
        for i in 1...5 { #expect(limiter.admit("a", now: t0 + .seconds(i)) == nil) }
        #expect(limiter.admit("b", now: t0 + .seconds(1)) == 0, "kinds are limited separately")
        #expect(limiter.suppressed("a") == 5)
        #expect(limiter.admit("a", now: t0 + .seconds(10)) == 5)
        #expect(limiter.suppressed("a") == 0)
        #expect(LogRateLimiter<String>.line("x", suppressed: 5, interval: .seconds(10)) == "x (5 similar lines suppressed, at most one per 10 s)")
        #expect(LogRateLimiter<String>.line("x", suppressed: 0, interval: .seconds(10)) == "x")
    }
}
