import Foundation
import Testing

/// `ble decode` following channel setup (Core Specification 5.4, Vol 3, Part A) to decode
/// dynamic channels, and carrying every decoded field in `--json`. The captures are crafted
/// here byte by byte: btsnoop records as in `CLIDecodeHostileTests`, HCI ACL packets (Vol 4,
/// Part E, 5.4.2), basic L2CAP headers (Vol 3, Part A, 3.1), signaling commands in the
/// layouts of Vol 3, Part A, 4.2, 4.3, 4.6, 4.7, 4.22, 4.23, 4.25 and 4.26, K-frames with
/// their SDU Length (3.4.3), ATT PDUs of Vol 3, Part F, 3.4 and Disconnection Complete
/// (Vol 4, Part E, 7.7.5). See Fixtures/README.md.
@Suite struct CLIDecodeChannelTests {
    static let handle: UInt16 = 0x0040

    /// One ACL packet carrying one whole L2CAP PDU on `cid`; flags 0 = sent, 1 = received.
    static func acl(_ cid: UInt16, _ payload: [UInt8], received: Bool, at t: UInt64) -> [UInt8] {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let l2cap = le(UInt16(payload.count)) + le(cid) + payload
        // PB 0b00 (first non-flushable) from the host, 0b10 (first flushable) from the controller.
        let handleField = handle | (received ? 0x2000 : 0)
        return CLIDecodeHostileTests.record([0x02] + le(handleField) + le(UInt16(l2cap.count)) + l2cap, flags: received ? 1 : 0, timestamp: t)
    }

    static func run(_ records: [[UInt8]]) async throws -> (text: [String], json: [[String: Any]]) {
        let path = try CLIDecodeHostileTests.write(CLIDecodeHostileTests.header + records.flatMap { $0 })
        let text = try await BLETool.run(["decode", path])
        #expect(text.status == 0, "\(text.stderr)")
        let json = try await BLETool.run(["decode", "--json", path])
        #expect(json.status == 0)
        return (text.stdoutLines, try BLETool.jsonLines(json))
    }

    static let t0: UInt64 = 0x00E2_5C1A_0000_0000

    /// LE Credit Based Connection Request (0x14) from the host: id 1, SPSM 0x0080, SCID 0x0040,
    /// MTU 512, MPS 100, 8 credits; the peer's Response (0x15): DCID 0x0041, MTU 256, MPS 64,
    /// 4 credits, result 0x0000. Then an SDU "hello" sent in two K-frames on 0x0041, an SDU
    /// 01 02 03 received on 0x0040, an SDU Length over our MTU, a Disconnection Request (0x06)
    /// and Response (0x07), and a frame on the closed channel.
    @Test func leCreditBasedChannel() async throws {
        let (text, json) = try await Self.run([
            Self.acl(0x0005, [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x08, 0x00], received: false, at: Self.t0),
            Self.acl(0x0005, [0x15, 0x01, 0x0A, 0x00, 0x41, 0x00, 0x00, 0x01, 0x40, 0x00, 0x04, 0x00, 0x00, 0x00], received: true, at: Self.t0 + 1),
            Self.acl(0x0041, [0x05, 0x00, 0x68, 0x65, 0x6C], received: false, at: Self.t0 + 2),
            Self.acl(0x0041, [0x6C, 0x6F], received: false, at: Self.t0 + 3),
            Self.acl(0x0040, [0x03, 0x00, 0x01, 0x02, 0x03], received: true, at: Self.t0 + 4),
            // SDU Length 0x0400 = 1024 > our MTU 512.
            Self.acl(0x0040, [0x00, 0x04, 0xAA], received: true, at: Self.t0 + 5),
            Self.acl(0x0005, [0x06, 0x02, 0x04, 0x00, 0x41, 0x00, 0x40, 0x00], received: false, at: Self.t0 + 6),
            Self.acl(0x0005, [0x07, 0x02, 0x04, 0x00, 0x41, 0x00, 0x40, 0x00], received: true, at: Self.t0 + 7),
            Self.acl(0x0040, [0x01, 0x00, 0x09], received: true, at: Self.t0 + 8),
        ])
        try #require(json.count == 9)
        let request = try #require((json[0]["signaling"] as? [[String: Any]])?.first)
        #expect(request["code"] as? Int == 0x14)
        #expect(request["identifier"] as? Int == 1)
        #expect(request["psm"] as? Int == 0x0080)
        #expect(request["scid"] as? Int == 0x0040)
        #expect(request["mtu"] as? Int == 512)
        #expect(request["mps"] as? Int == 100)
        #expect(request["credits"] as? Int == 8)
        let response = try #require((json[1]["signaling"] as? [[String: Any]])?.first)
        #expect(response["dcid"] as? Int == 0x0041)
        #expect(response["result"] as? Int == 0)

        #expect(json[2]["psm"] as? Int == 0x0080)
        #expect(json[2]["channel"] as? String == "K-frame")
        #expect(json[2]["sduLength"] as? Int == 5)
        #expect(json[2]["sdu"] == nil)
        #expect(text[2].hasSuffix("ACL handle 0x0040 PB start len 9 | L2CAP CID 0x0041 PSM 0x0080 K-frame len 5 SDU length 5, SDU continues"), "\(text[2])")
        #expect(json[3]["sdu"] as? String == "68656c6c6f")
        #expect(json[3]["frames"] as? Int == 2)
        #expect(json[3]["sduLength"] == nil)
        #expect(text[3].hasSuffix("L2CAP CID 0x0041 PSM 0x0080 K-frame len 2 | SDU len 5: 68656c6c6f"), "\(text[3])")
        #expect(json[4]["sdu"] as? String == "010203")
        #expect(json[5]["kframeError"] as? String != nil)
        #expect(text[5].contains("malformed"), "\(text[5])")
        #expect((json[7]["signaling"] as? [[String: Any]])?.first?["code"] as? Int == 0x07)
        // After the Disconnection Response, 0x0040 is no channel any more.
        #expect(json[8]["psm"] == nil)
        #expect(json[8]["payload"] as? String == "010009")
    }

    /// EATT: Credit Based Connection Request (0x17) from the host for SPSM 0x0027 with SCIDs
    /// 0x0042 and 0x0043 (MTU 64, MPS 64, 10 credits); the Response (0x18) with result 0x0004
    /// (some refused) gives DCID 0x0050 for the first and 0x0000 for the second. A Handle
    /// Value Notification (0x1B) for handle 0x0012 with value 00 48 arrives as one K-frame on
    /// 0x0042; one on 0x0043 is not decoded. After Disconnection Complete for the link, 0x0042
    /// means nothing either.
    @Test func eattChannelsAndLinkEnd() async throws {
        let (text, json) = try await Self.run([
            Self.acl(0x0005, [0x17, 0x03, 0x0C, 0x00, 0x27, 0x00, 0x40, 0x00, 0x40, 0x00, 0x0A, 0x00, 0x42, 0x00, 0x43, 0x00], received: false, at: Self.t0),
            Self.acl(0x0005, [0x18, 0x03, 0x0C, 0x00, 0x40, 0x00, 0x40, 0x00, 0x0A, 0x00, 0x04, 0x00, 0x50, 0x00, 0x00, 0x00], received: true, at: Self.t0 + 1),
            Self.acl(0x0042, [0x05, 0x00, 0x1B, 0x12, 0x00, 0x00, 0x48], received: true, at: Self.t0 + 2),
            Self.acl(0x0043, [0x05, 0x00, 0x1B, 0x12, 0x00, 0x00, 0x48], received: true, at: Self.t0 + 3),
            // Disconnection Complete: status 0x00, handle 0x0040, reason 0x13; flags 3 = received event.
            CLIDecodeHostileTests.record([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13], flags: 3, timestamp: Self.t0 + 4),
            Self.acl(0x0042, [0x05, 0x00, 0x1B, 0x12, 0x00, 0x00, 0x48], received: true, at: Self.t0 + 5),
        ])
        try #require(json.count == 6)
        let request = try #require((json[0]["signaling"] as? [[String: Any]])?.first)
        #expect(request["psm"] as? Int == 0x0027)
        #expect(request["scids"] as? [Int] == [0x0042, 0x0043])
        #expect(text[0].hasSuffix("Credit Based Connection Request (0x17) id 3: psm 0x0027 (EATT) mtu 64 mps 64 credits 10 scids 0x0042,0x0043"), "\(text[0])")
        let response = try #require((json[1]["signaling"] as? [[String: Any]])?.first)
        #expect(response["dcids"] as? [Int] == [0x0050, 0x0000])
        #expect(response["result"] as? Int == 4)

        #expect(json[2]["channel"] as? String == "EATT")
        #expect(json[2]["attOpcode"] as? Int == 0x1B)
        #expect(json[2]["attHandle"] as? Int == 0x0012)
        #expect(json[2]["attValue"] as? String == "0048")
        #expect(text[2].hasSuffix("| EATT SDU len 5 | Handle Value Notification (0x1B): handle 0x0012 value 0048"), "\(text[2])")
        #expect(json[3]["attOpcode"] == nil)
        #expect(json[5]["attOpcode"] == nil)
    }

    /// ATT over BR/EDR: the peer's Connection Request (0x02) on the BR/EDR signaling channel
    /// 0x0001: id 7, PSM 0x001F, SCID 0x0045; our C-frame answers with two commands, a
    /// Connection Response (0x03) "pending" (result 0x0001) and the final one, DCID 0x0060,
    /// SCID 0x0045, result 0x0000. Then a Read Request (0x0A) for handle 0x0003 on our CID
    /// 0x0060 and its Read Response (0x0B) 01 on the peer's 0x0045.
    @Test func attOverBREDR() async throws {
        let (text, json) = try await Self.run([
            Self.acl(0x0001, [0x02, 0x07, 0x04, 0x00, 0x1F, 0x00, 0x45, 0x00], received: true, at: Self.t0),
            Self.acl(0x0001, [0x03, 0x07, 0x08, 0x00, 0x60, 0x00, 0x45, 0x00, 0x01, 0x00, 0x00, 0x00,
                              0x03, 0x07, 0x08, 0x00, 0x60, 0x00, 0x45, 0x00, 0x00, 0x00, 0x00, 0x00], received: false, at: Self.t0 + 1),
            Self.acl(0x0060, [0x0A, 0x03, 0x00], received: true, at: Self.t0 + 2),
            Self.acl(0x0045, [0x0B, 0x01], received: false, at: Self.t0 + 3),
        ])
        try #require(json.count == 4)
        let request = try #require((json[0]["signaling"] as? [[String: Any]])?.first)
        #expect(request["psm"] as? Int == 0x001F)
        #expect(request["scid"] as? Int == 0x0045)
        #expect(text[0].hasSuffix("signaling len 8 | Connection Request (0x02) id 7: psm 0x001F (ATT) scid 0x0045"), "\(text[0])")
        let responses = try #require(json[1]["signaling"] as? [[String: Any]])
        #expect(responses.map { $0["result"] as? Int } == [1, 0])
        #expect(json[2]["channel"] as? String == "ATT")
        #expect(json[2]["attOpcode"] as? Int == 0x0A)
        #expect(json[2]["attHandle"] as? Int == 0x0003)
        #expect(json[3]["attOpcode"] as? Int == 0x0B)
        #expect(json[3]["attValue"] as? String == "01")
        #expect(text[3].hasSuffix("L2CAP CID 0x0045 PSM 0x001F (ATT) len 2 | Read Response (0x0B): 01"), "\(text[3])")
    }

    /// Every ATT field in the JSON: the notifications of the real yeelock capture carry their
    /// value as `attValue`, equal to the hex after "value" in the text line.
    @Test func notificationValuesInJSON() async throws {
        let capture = BLETool.fixture("captures/real/cnrd__yeelock.btsnoop").path
        let text = try await BLETool.run(["decode", capture])
        let json = try BLETool.jsonLines(try await BLETool.run(["decode", "--json", capture]))
        try #require(text.stdoutLines.count == json.count)
        var notifications = 0
        for (line, object) in zip(text.stdoutLines, json) where object["attOpcode"] as? Int == 0x1B || object["attOpcode"] as? Int == 0x1D {
            notifications += 1
            let value = try #require(object["attValue"] as? String, "\(line)")
            #expect(line.hasSuffix("value \(value)"), "\(line)")
        }
        #expect(notifications > 0)
    }
}
