import Foundation
import Testing

/// `ble decode --json` carries what its summary text says: the L2CAP reassembly state of an
/// ACL fragment, the UUIDs and names of the services in a Read By Group Type Response, and the
/// bytes of SCO and ISO records. Real records from Fixtures/captures/real (file and record
/// named in each test) and captures crafted byte by byte as in `CLIDecodeChannelTests`; see
/// Fixtures/README.md.
@Suite struct CLIDecodeJSONFieldsTests {
    static func json(_ capture: String) async throws -> [[String: Any]] {
        let run = try await BLETool.run(["decode", "--json", capture])
        #expect(run.status == 0, "\(run.stderr)")
        return try BLETool.jsonLines(run)
    }

    /// cnrd__yeelock.btsnoop records 453 and 456: the primary services of the lock, one pair of
    /// 16-bit UUIDs with names (Assigned Numbers) and one 128-bit UUID without.
    @Test func readByGroupTypeResponseNamesItsServices() async throws {
        let lines = try await Self.json(BLETool.fixture("captures/real/cnrd__yeelock.btsnoop").path)
        let first = try #require(lines.first { $0["index"] as? Int == 453 })
        #expect(first["attOpcode"] as? Int == 0x11)
        let services = try #require(first["attData"] as? [[String: Any]])
        #expect(services.map { $0["handle"] as? Int } == [0x0001, 0x0006])
        #expect(services.map { $0["endGroupHandle"] as? Int } == [0x0005, 0x0009])
        #expect(services.map { $0["value"] as? String } == ["0018", "0118"])
        #expect(services.map { $0["uuid"] as? String } == ["1800", "1801"])
        #expect(services.map { $0["name"] as? String } == ["Generic Access", "Generic Attribute"])
        let second = try #require(lines.first { $0["index"] as? Int == 456 })
        let vendor = try #require((second["attData"] as? [[String: Any]])?.first)
        #expect(vendor["value"] as? String == "393a042f66746494a34fc06fca3daf58")
        #expect(vendor["uuid"] as? String == "58AF3DCA-6FC0-4FA3-9464-74662F043A39")
        #expect(vendor["name"] is NSNull)
    }

    /// crossnite__NovaX-Escooter.btsnoop records 621 and 622: a Read By Group Type Response in two
    /// ACL fragments; the first says the PDU continues, the second carries the PDU.
    @Test func fragmentThatContinuesSaysSo() async throws {
        let lines = try await Self.json(BLETool.fixture("captures/real/crossnite__NovaX-Escooter.btsnoop").path)
        let start = try #require(lines.first { $0["index"] as? Int == 621 })
        #expect(start["boundary"] as? String == "start (flushable)")
        #expect(start["reassembly"] as? String == "continues")
        #expect(start["cid"] == nil)
        let end = try #require(lines.first { $0["index"] as? Int == 622 })
        #expect(end["boundary"] as? String == "continuation")
        #expect(end["reassembly"] == nil)
        #expect(end["cid"] as? Int == 0x0004)
        #expect(end["attOpcode"] as? Int == 0x11)
    }

    /// Crafted (Vol 4, Part E, 5.4.2; Vol 3, Part A, 3.1; Vol 3, Part F, 3.4.7.1): a start
    /// fragment of a 7-octet notification carrying 6 of its 11 bytes; a new start fragment
    /// holding a whole 3-octet notification, which discards the partial PDU; a continuation
    /// with no PDU in progress.
    @Test func droppedAndDiscardedFragments() async throws {
        let t0 = CLIDecodeChannelTests.t0
        func acl(_ flags: UInt16, _ data: [UInt8], at t: UInt64) -> [UInt8] {
            let h = CLIDecodeChannelTests.handle | flags
            return CLIDecodeHostileTests.record([0x02, UInt8(h & 0xFF), UInt8(h >> 8), UInt8(data.count), 0x00] + data, flags: 1, timestamp: t)
        }
        let (text, json) = try await CLIDecodeChannelTests.run([
            acl(0x2000, [0x07, 0x00, 0x04, 0x00, 0x1B, 0x12], at: t0),
            acl(0x2000, [0x03, 0x00, 0x04, 0x00, 0x1B, 0x12, 0x00], at: t0 + 1),
            acl(0x1000, [0xAA, 0xBB], at: t0 + 2),
        ])
        try #require(json.count == 3)
        #expect(json[0]["reassembly"] as? String == "continues")
        #expect(json[0]["discardedPartialPDU"] == nil)
        #expect(json[1]["discardedPartialPDU"] as? String == "6 of 11 bytes were pending: partial PDU discarded")
        #expect(json[1]["reassembly"] == nil)
        #expect(json[1]["cid"] as? Int == 0x0004)
        #expect(json[1]["attOpcode"] as? Int == 0x1B)
        #expect(json[1]["attHandle"] as? Int == 0x0012)
        #expect(json[2]["reassembly"] as? String == "dropped")
        #expect(json[2]["reassemblyError"] as? String == "continuation fragment (2 bytes) with no PDU in progress")
        #expect(text[1].hasSuffix("| L2CAP dropped: start fragment while 6 of 11 bytes were pending: partial PDU discarded | L2CAP CID 0x0004 ATT len 3 | Handle Value Notification (0x1B): handle 0x0012 value "))
        #expect(text[2].hasSuffix("| L2CAP dropped: continuation fragment (2 bytes) with no PDU in progress"))
    }

    /// Crafted: an SCO packet (Vol 4, Part E, 5.4.3: handle 0x0001, length 3) and an ISO
    /// packet (5.4.5: handle 0x0060, PB 0b10, load length 6; sequence number 1, ISO SDU
    /// length 2, two octets), H4 indicators 0x03 and 0x05: each JSON line carries the bytes.
    @Test func scoAndISORecordsCarryTheirBytes() async throws {
        let t0 = CLIDecodeChannelTests.t0
        let (text, json) = try await CLIDecodeChannelTests.run([
            CLIDecodeHostileTests.record([0x03, 0x01, 0x00, 0x03, 0xAA, 0xBB, 0xCC], flags: 1, timestamp: t0),
            CLIDecodeHostileTests.record([0x05, 0x60, 0x20, 0x06, 0x00, 0x01, 0x00, 0x02, 0x00, 0xDE, 0xAD], flags: 0, timestamp: t0 + 1),
        ])
        try #require(json.count == 2)
        #expect(json[0]["type"] as? String == "SCO")
        #expect(json[0]["payload"] as? String == "010003aabbcc")
        #expect(json[1]["type"] as? String == "ISO")
        #expect(json[1]["payload"] as? String == "6020060001000200dead")
        #expect(text[0].hasSuffix("> SCO 6 bytes"))
        #expect(text[1].hasSuffix("< ISO 10 bytes"))
    }
}
