import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// The receive path of a notification below ATT: the framer's reused ACL payload buffer and
/// the reassembler's views. Bytes follow the Core Specification's layouts: H4 indicator 0x02
/// (Vol 4, Part A, 2), the ACL Data packet header (Vol 4, Part E, 5.4.2: handle and flags,
/// then Data_Total_Length), the L2CAP basic header (Vol 3, Part A, 3.1: length, CID 0x0004)
/// and the Handle Value Notification (Vol 3, Part F, 3.4.7.1: opcode 0x1B, handle, value).
@Suite struct NotificationReceivePathTests {
    /// Handle Value Notification for attribute handle 0x0012 with value 01 02.
    static let att: [UInt8] = [0x1B, 0x12, 0x00, 0x01, 0x02]
    /// The same in one L2CAP basic-mode PDU on the ATT channel (length 5, CID 0x0004).
    static let l2cap: [UInt8] = [0x05, 0x00, 0x04, 0x00] + att
    /// In one ACL packet on connection handle 0x0040, PB = 0b10 (first, automatically
    /// flushable): handle-and-flags 0x2040, Data_Total_Length 9.
    static let h4: [UInt8] = [0x02, 0x40, 0x20, 0x09, 0x00] + l2cap

    func packets(_ bytes: [UInt8], framer: inout H4Framer) throws -> [ACLDataPacket] {
        var out: [ACLDataPacket] = []
        try bytes.withUnsafeBytes { raw in
            try framer.feed(raw) { if case .acl(let p) = $0 { out.append(p) } }
        }
        return out
    }

    @Test func aWholeNotificationPDUIsRoutedAsAViewOfTheACLPayload() throws {
        var framer = H4Framer(endpoint: "test")
        let p = try #require(try packets(Self.h4, framer: &framer).first)
        #expect(p.handle == 0x0040)
        #expect(p.boundary == .firstFlushable)
        #expect(p.data == Self.l2cap)
        var r = ACLReassembler()
        #expect(r.singleFragmentChannel(p) == 0x0004)
        guard case .complete(let cid, let payload) = r.receive(p) else { Issue.record("not complete"); return }
        #expect(cid == 0x0004)
        #expect(Array(payload) == Self.att)
        // A view: its indices are those of the ACL payload, past the 4-byte L2CAP header.
        #expect(payload.startIndex == 4)
    }

    @Test func packetsKeptByTheStackAreNotChangedByLaterOnes() throws {
        var framer = H4Framer(endpoint: "test")
        let first = try packets(Self.h4, framer: &framer)
        // A second notification on the same link, handle 0x0013, value 03 04.
        let second: [UInt8] = [0x02, 0x40, 0x20, 0x09, 0x00, 0x05, 0x00, 0x04, 0x00, 0x1B, 0x13, 0x00, 0x03, 0x04]
        let later = try packets(second + second, framer: &framer)
        #expect(first.map(\.data) == [Self.l2cap])
        #expect(later.map(\.data) == [Array(second[5...]), Array(second[5...])])
    }

    @Test func fragmentsAreNotASingleFragmentPDU() throws {
        // The notification's L2CAP PDU cut after 6 bytes: a start fragment (PB 0b10) and a
        // continuation (PB 0b01, handle-and-flags 0x1040).
        var r = ACLReassembler()
        let start = ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: Array(Self.l2cap[..<6]))
        let rest = ACLDataPacket(handle: 0x0040, boundary: .continuing, data: Array(Self.l2cap[6...]))
        #expect(r.singleFragmentChannel(start) == nil)
        #expect(r.receive(start) == .incomplete)
        #expect(r.singleFragmentChannel(rest) == nil)
        guard case .complete(let cid, let payload) = r.receive(rest) else { Issue.record("not complete"); return }
        #expect(cid == 0x0004)
        #expect(Array(payload) == Self.att)
        // The next PDU reuses the buffer; the view handed out before keeps its bytes.
        let other: [UInt8] = [0x05, 0x00, 0x04, 0x00, 0x1B, 0x13, 0x00, 0x03, 0x04]
        _ = r.receive(ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: Array(other[..<6])))
        #expect(r.receive(ACLDataPacket(handle: 0x0040, boundary: .continuing, data: Array(other[6...])))
                == .complete(channelID: 0x0004, payload: other[4...]))
        #expect(Array(payload) == Self.att)
    }

    @Test func aLengthThatDisagreesIsNotTakenAsWhole() {
        var r = ACLReassembler()
        // L2CAP length 6 but 5 bytes follow the basic header: a start of a longer PDU.
        let p = ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: [0x06, 0x00, 0x04, 0x00] + Self.att)
        #expect(r.singleFragmentChannel(p) == nil)
        #expect(r.receive(p) == .incomplete)
        #expect(r.inProgress)
    }
}

/// The framer's raw ACL offer (`H4Framer.feed(_:acl:_:)`), with the same spec-layout bytes.
@Suite struct RawACLOfferTests {
    typealias P = NotificationReceivePathTests
    /// HCI_Number_Of_Completed_Packets (Vol 4, Part E, 7.7.19): event 0x13, length 5, one
    /// handle (0x0040) with 1 completed packet.
    static let event: [UInt8] = [0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00]

    struct Run {
        var offered: [[UInt8]] = []
        var emitted: [HCIPacket] = []
    }

    func feed(_ chunks: [[UInt8]], take: @escaping ([UInt8]) -> Bool) throws -> Run {
        var framer = H4Framer(endpoint: "test")
        var run = Run()
        for chunk in chunks {
            try chunk.withUnsafeBytes { raw in
                try framer.feed(raw, acl: { body in
                    let bytes = Array(body)
                    run.offered.append(bytes)
                    return take(bytes)
                }) { run.emitted.append($0) }
            }
        }
        return run
    }

    @Test func anACLPacketIsOfferedAsItsHeaderAndDataAndNotEmittedWhenTaken() throws {
        let run = try feed([P.h4 + Self.event + P.h4], take: { _ in true })
        // The ACL header (handle and flags 0x2040, length 9) and the data, without the H4 indicator.
        #expect(run.offered == [Array(P.h4.dropFirst()), Array(P.h4.dropFirst())])
        #expect(run.emitted == [.event(HCIEventPacket(code: 0x13, parameters: [0x01, 0x40, 0x00, 0x01, 0x00]))])
    }

    @Test func aDeclinedPacketIsEmittedInItsPlace() throws {
        var calls = 0
        let run = try feed([P.h4 + Self.event + P.h4], take: { _ in calls += 1; return calls == 2 })
        #expect(run.offered.count == 2)
        #expect(run.emitted == [
            .acl(ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: P.l2cap)),
            .event(HCIEventPacket(code: 0x13, parameters: [0x01, 0x40, 0x00, 0x01, 0x00])),
        ])
    }

    @Test func aPacketCutAcrossReadsIsOfferedOnceWhole() throws {
        // Cut inside the ACL header, then inside the data.
        let run = try feed([Array(P.h4[..<3]), Array(P.h4[3..<9]), Array(P.h4[9...])], take: { _ in true })
        #expect(run.offered == [Array(P.h4.dropFirst())])
        #expect(run.emitted.isEmpty)
    }

    @Test func aDatagramIsOfferedOnlyWhenItIsAWholeACLPacket() {
        func body(_ d: [UInt8]) -> [UInt8]? { d.withUnsafeBytes { H4Framer.aclBody(ofDatagram: $0).map { Array($0) } } }
        #expect(body(P.h4) == Array(P.h4.dropFirst()))
        #expect(body(Array(P.h4.dropLast())) == nil)   // length field 9, 8 bytes follow
        #expect(body(P.h4 + [0x00]) == nil)            // a byte too many
        #expect(body(Self.event) == nil)               // an event
        #expect(body([0x02, 0x40, 0x20]) == nil)       // a header cut short
    }
}
