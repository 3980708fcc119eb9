import Testing
import BLETestSupport
import GATTServer

/// The server's answers to the discovery requests, byte for byte as Vol 3, Part F, 3.4.1-3.4.4
/// lays them out, against `ServerBed.database` (ATT_MTU 23 unless exchanged).
struct DiscoveryPDUTests {
    /// The 128-bit UUID 0000FF02-1234-5678-9ABC-DEF012345678 as sent (least significant octet first).
    static let uuid2LE = "78563412 F0DEBC9A 78563412 02FF0000"
    static let uuid1LE = "78563412 F0DEBC9A 78563412 01FF0000"

    /// 3.4.2.1/3.4.2.2: Exchange MTU answers with the server's Rx MTU (517 = 0x0205); the
    /// link's ATT_MTU is the smaller of the two.
    @Test func exchangeMTU() {
        let bed = ServerBed()
        #expect(bed.request("02 F700") == hex("03 0502"))
        // A client Rx MTU below 23 leaves ATT_MTU at 23.
        #expect(bed.request("02 1000") == hex("03 0502"))
    }

    /// 3.4.4.9/3.4.4.10: primary services with 16-bit UUIDs in one response (length 6), the
    /// 128-bit one in the next (length 20), then Attribute Not Found.
    @Test func readByGroupTypePrimaryServices() {
        let bed = ServerBed()
        #expect(bed.request("10 0100 FFFF 0028") == hex("11 06 0100 0600 0118 0700 0B00 0F18"))
        #expect(bed.request("10 0C00 FFFF 0028") == hex("11 14 0C00 1200" + Self.uuid1LE))
        #expect(bed.request("10 1300 FFFF 0028") == hex("01 10 1300 0A"))
    }

    @Test func readByGroupTypeErrors() {
        let bed = ServerBed()
        // Not a grouping type: Unsupported Group Type (0x10).
        #expect(bed.request("10 0100 FFFF 0328") == hex("01 10 0100 10"))
        // Starting handle 0, or above the ending handle: Invalid Handle (0x01).
        #expect(bed.request("10 0000 FFFF 0028") == hex("01 10 0000 01"))
        #expect(bed.request("10 0500 0400 0028") == hex("01 10 0500 01"))
        // Secondary services: none.
        #expect(bed.request("10 0100 FFFF 0128") == hex("01 10 0100 0A"))
    }

    /// 3.4.3.3/3.4.3.4: the Battery service's group.
    @Test func findByTypeValue() {
        let bed = ServerBed()
        #expect(bed.request("06 0100 FFFF 0028 0F18") == hex("07 0700 0B00"))
        #expect(bed.request("06 0100 FFFF 0028 0D18") == hex("01 06 0100 0A"))
    }

    /// 3.4.4.1/3.4.4.2: characteristic declarations (properties, value handle, UUID).
    @Test func readByTypeCharacteristics() {
        let bed = ServerBed()
        #expect(bed.request("08 0100 0600 0328") == hex("09 07 0200 20 0300 052A 0500 02 0600 2A2B"))
        #expect(bed.request("08 0700 0B00 0328") == hex("09 07 0800 12 0900 192A"))
        // The 128-bit declaration (length 21) comes alone.
        #expect(bed.request("08 0C00 1200 0328") == hex("09 15 0D00 0A 0E00" + Self.uuid2LE))
        #expect(bed.request("08 1300 FFFF 0328") == hex("01 08 1300 0A"))
    }

    /// Read By Type of a value needing encryption gives Insufficient Encryption with its handle.
    @Test func readByTypeRefusedForSecurity() {
        let bed = ServerBed()
        #expect(bed.request("08 0100 FFFF 002A") == hex("01 08 1000 0F"))
    }

    /// 3.4.3.1/3.4.3.2: format 1 (16-bit UUIDs) until the 128-bit one, which comes in format 2.
    @Test func findInformation() {
        let bed = ServerBed()
        #expect(bed.request("04 0800 0B00") == hex("05 01 0800 0328 0900 192A 0A00 0229 0B00 0429"))
        #expect(bed.request("04 0E00 0E00") == hex("05 02 0E00" + Self.uuid2LE))
        #expect(bed.request("04 1300 FFFF") == hex("01 04 1300 0A"))
        #expect(bed.request("04 0000 0100") == hex("01 04 0000 01"))
    }

    /// Responses stop at ATT_MTU: with 23 octets, Find Information holds (23 - 2) / 4 = 5 entries.
    @Test func findInformationFitsTheMTU() {
        let bed = ServerBed()
        #expect(bed.request("04 0100 FFFF") == hex("05 01 0100 0028 0200 0328 0300 052A 0400 0229 0500 0328"))
    }
}
