@testable import BLECore
import Testing

/// The management-interface answers of `JustWorksAgent`, byte for byte. Formats from BlueZ
/// doc/mgmt-api.txt: every packet is code, controller index, parameter length (2 octets each,
/// little-endian) and the parameters; User Confirmation Request Event 0x000F carries Address
/// (6, little-endian), Address_Type (1: 0x02 LE Random), Confirm_Hint (1) and Value (4); User
/// Confirmation Reply 0x001C and Negative Reply 0x001D carry Address and Address_Type.
@Suite("JustWorksAgent replies")
struct JustWorksAgentTests {
    /// Peer F0:00:00:00:48:52, LE Random, on hci0; Value 0x0001E240 (123456).
    static func request(index: UInt8 = 0x00, hint: UInt8) -> [UInt8] {
        [0x0F, 0x00, index, 0x00, 0x0C, 0x00, 0x52, 0x48, 0x00, 0x00, 0x00, 0xF0, 0x02, hint, 0x40, 0xE2, 0x01, 0x00]
    }

    @Test("Confirm_Hint 1 (Just Works) gets User Confirmation Reply with the same address")
    func justWorks() {
        #expect(JustWorksAgent.reply(to: Self.request(hint: 0x01)[...], index: 0)
            == [0x1C, 0x00, 0x00, 0x00, 0x07, 0x00, 0x52, 0x48, 0x00, 0x00, 0x00, 0xF0, 0x02])
    }

    @Test("Confirm_Hint 0 (a value to compare) gets User Confirmation Negative Reply")
    func numericComparison() {
        #expect(JustWorksAgent.reply(to: Self.request(hint: 0x00)[...], index: 0)
            == [0x1D, 0x00, 0x00, 0x00, 0x07, 0x00, 0x52, 0x48, 0x00, 0x00, 0x00, 0xF0, 0x02])
    }

    @Test("Other adapters, other events and truncated events get no answer")
    func ignored() {
        #expect(JustWorksAgent.reply(to: Self.request(index: 0x01, hint: 0x01)[...], index: 0) == nil)
        // Command Complete (0x0001) for Set Low Energy on hci0.
        #expect(JustWorksAgent.reply(to: [0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x0D, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00][...], index: 0) == nil)
        let request = Self.request(hint: 0x01)
        for length in 0..<request.count {
            #expect(JustWorksAgent.reply(to: request[..<length], index: 0) == nil)
        }
    }
}
