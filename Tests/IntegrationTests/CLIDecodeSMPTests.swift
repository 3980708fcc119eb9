import Foundation
import Testing

/// `ble decode` names Security Manager PDUs on the LE fixed channel 0x0006 and carries their
/// fields in `--json`. PDUs in the layouts of Core Specification 5.4, Vol 3, Part H, 3.5.1,
/// 3.5.2, 3.5.5, 3.6.5 and 3.6.7, in crafted captures (see CLIDecodeChannelTests).
@Suite struct CLIDecodeSMPTests {
    @Test func pairingPDUsAreDecodedWithTheirFields() async throws {
        let t0 = CLIDecodeChannelTests.t0
        let (text, json) = try await CLIDecodeChannelTests.run([
            // Pairing Request: NoInputNoOutput, no OOB data, AuthReq Bonding|MITM|SC (0x0D),
            // 16-octet keys, EncKey|IdKey|SignKey each way.
            CLIDecodeChannelTests.acl(0x0006, [0x01, 0x03, 0x00, 0x0D, 0x10, 0x07, 0x07], received: false, at: t0),
            // Pairing Response: KeyboardDisplay, AuthReq 0x0D, 16, EncKey|IdKey.
            CLIDecodeChannelTests.acl(0x0006, [0x02, 0x04, 0x00, 0x0D, 0x10, 0x03, 0x03], received: true, at: t0 + 1),
            // Pairing Failed: Confirm Value Failed (0x04).
            CLIDecodeChannelTests.acl(0x0006, [0x05, 0x04], received: true, at: t0 + 2),
            // Identity Address Information: public, C4:5E:B1:00:00:01 (least significant octet first).
            CLIDecodeChannelTests.acl(0x0006, [0x09, 0x00, 0x01, 0x00, 0x00, 0xB1, 0x5E, 0xC4], received: true, at: t0 + 3),
            // Security Request: Bonding|MITM.
            CLIDecodeChannelTests.acl(0x0006, [0x0B, 0x05], received: true, at: t0 + 4),
            // A Pairing Request cut short.
            CLIDecodeChannelTests.acl(0x0006, [0x01, 0x03], received: true, at: t0 + 5),
        ])
        try #require(json.count == 6 && text.count == 6)
        #expect(json[0]["smpCode"] as? Int == 0x01)
        #expect(json[0]["ioCapability"] as? Int == 0x03)
        #expect(json[0]["authReq"] as? Int == 0x0D)
        #expect(json[0]["maxKeySize"] as? Int == 16)
        #expect(json[0]["initiatorKeyDistribution"] as? Int == 0x07)
        #expect(json[1]["smpCode"] as? Int == 0x02)
        #expect(json[1]["ioCapability"] as? Int == 0x04)
        #expect(json[1]["responderKeyDistribution"] as? Int == 0x03)
        #expect(json[2]["reason"] as? Int == 0x04)
        #expect(text[2].contains("Confirm Value Failed (0x04)"), "\(text[2])")
        #expect(json[3]["address"] as? String == "C4:5E:B1:00:00:01")
        #expect(json[3]["addressType"] as? Int == 0)
        #expect(json[4]["authReq"] as? Int == 0x05)
        #expect(json[5]["smpCode"] as? Int == 0x01)
        #expect(json[5]["smp"] as? String == "0103")
        #expect(json[5]["ioCapability"] == nil)
        #expect(text[5].hasSuffix("undecodable"), "\(text[5])")
    }
}
