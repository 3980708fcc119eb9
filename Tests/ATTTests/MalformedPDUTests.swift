import Testing
import ATT
import BLEWire

/// Truncated, over-long and inconsistent PDUs per family (field sizes from Core Spec 5.4,
/// Vol 3, Part F, 3.4): every one must give a DecodeError, never a trap.
struct MalformedExample: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let why: String
    var testDescription: String { why + ": " + bytes.hexString() }
}

let malformed: [MalformedExample] = [
    .init(bytes: [], why: "empty SDU"),
    .init(bytes: [0x01, 0x0A, 0x03, 0x00], why: "Error Response without Error Code"),
    .init(bytes: [0x01, 0x0A, 0x03, 0x00, 0x05, 0x00], why: "Error Response with a trailing octet"),
    .init(bytes: [0x02, 0x05], why: "Exchange MTU Request with a 1-octet MTU"),
    .init(bytes: [0x03], why: "Exchange MTU Response without MTU"),
    .init(bytes: [0x04, 0x01, 0x00, 0xFF], why: "Find Information Request without full Ending Handle"),
    .init(bytes: [0x05], why: "Find Information Response without Format"),
    .init(bytes: [0x05, 0x01], why: "Find Information Response with no Information Data"),
    .init(bytes: [0x05, 0x03, 0x03, 0x00, 0x02, 0x29], why: "Find Information Response with Format 3"),
    .init(bytes: [0x05, 0x00, 0x03, 0x00, 0x02, 0x29], why: "Find Information Response with Format 0"),
    .init(bytes: [0x05, 0x01, 0x03, 0x00, 0x02, 0x29, 0x04], why: "Format 1 data not a multiple of 4"),
    .init(bytes: [0x05, 0x02, 0x03, 0x00, 0x02, 0x29], why: "Format 2 data shorter than one 18-octet entry"),
    .init(bytes: [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00], why: "Find By Type Value Request with a 1-octet type"),
    .init(bytes: [0x07], why: "Find By Type Value Response with an empty list"),
    .init(bytes: [0x07, 0x10, 0x00, 0x1A], why: "Find By Type Value Response with half an entry"),
    .init(bytes: [0x08, 0x01, 0x00, 0xFF, 0xFF], why: "Read By Type Request without type"),
    .init(bytes: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x01, 0x02, 0x03, 0x04], why: "Read By Type Request with a 4-octet type"),
    .init(bytes: [0x09], why: "Read By Type Response without Length"),
    .init(bytes: [0x09, 0x07], why: "Read By Type Response with an empty list"),
    .init(bytes: [0x09, 0x00, 0x02, 0x00], why: "Read By Type Response with Length 0"),
    .init(bytes: [0x09, 0x01, 0x02], why: "Read By Type Response with Length 1"),
    .init(bytes: [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00], why: "Length 7 does not divide 9 octets"),
    .init(bytes: [0x0A, 0x03], why: "Read Request with a 1-octet handle"),
    .init(bytes: [0x0A, 0x03, 0x00, 0x00], why: "Read Request with a trailing octet"),
    .init(bytes: [0x0C, 0x03, 0x00, 0x16], why: "Read Blob Request with a 1-octet offset"),
    .init(bytes: [0x0E, 0x03, 0x00], why: "Read Multiple Request with one handle"),
    .init(bytes: [0x0E, 0x03, 0x00, 0x05], why: "Read Multiple Request with an odd length"),
    .init(bytes: [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x00], why: "Read By Group Type Request with a 3-octet type"),
    .init(bytes: [0x11, 0x03, 0x01, 0x00, 0x07], why: "Read By Group Type Response with Length 3"),
    .init(bytes: [0x11, 0x06], why: "Read By Group Type Response with an empty list"),
    .init(bytes: [0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00, 0x18, 0x08, 0x00], why: "Length 6 does not divide 8 octets"),
    .init(bytes: [0x20, 0x03, 0x00], why: "Read Multiple Variable Request with one handle"),
    .init(bytes: [0x21], why: "Read Multiple Variable Response with no tuples"),
    .init(bytes: [0x21, 0x01, 0x00, 0x11, 0x05], why: "Read Multiple Variable Response with half a Length"),
    .init(bytes: [0x12, 0x0C], why: "Write Request with a 1-octet handle"),
    .init(bytes: [0x13, 0x00], why: "Write Response with a parameter"),
    .init(bytes: [0x52], why: "Write Command without handle"),
    .init(bytes: [0xD2, 0x0E, 0x00, 0x01, 0x00, 0x00, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22], why: "Signed Write Command with an 11-octet signature"),
    .init(bytes: [0x16, 0x0E, 0x00, 0x00], why: "Prepare Write Request with a 1-octet offset"),
    .init(bytes: [0x17, 0x0E, 0x00], why: "Prepare Write Response without offset"),
    .init(bytes: [0x18], why: "Execute Write Request without Flags"),
    .init(bytes: [0x18, 0x02], why: "Execute Write Request with Flags 0x02"),
    .init(bytes: [0x18, 0x01, 0x00], why: "Execute Write Request with a trailing octet"),
    .init(bytes: [0x19, 0x01], why: "Execute Write Response with a parameter"),
    .init(bytes: [0x1B, 0x12], why: "Handle Value Notification with a 1-octet handle"),
    .init(bytes: [0x1D], why: "Handle Value Indication without handle"),
    .init(bytes: [0x1E, 0x00], why: "Handle Value Confirmation with a parameter"),
    .init(bytes: [0x23], why: "Multiple Handle Value Notification with no tuples"),
    .init(bytes: [0x23, 0x12, 0x00, 0x05, 0x00, 0x01], why: "Multiple Handle Value Notification value shorter than its Length"),
    .init(bytes: [0x23, 0x12, 0x00, 0x01, 0x00, 0x07, 0x15], why: "Multiple Handle Value Notification with a dangling octet"),
]

@Suite struct MalformedPDUTests {
    @Test(arguments: malformed)
    func malformedPDUIsATypedError(_ example: MalformedExample) {
        #expect(throws: DecodeError.self) { try ATTPDU(bytes: example.bytes) }
    }

    @Test func errorsNameTheStructureAndTheProblem() {
        #expect(throws: DecodeError.invalidValue(what: "Find Information Response", field: "Format", value: 3)) {
            try ATTPDU(bytes: [0x05, 0x03, 0x03, 0x00, 0x02, 0x29])
        }
        #expect(throws: DecodeError.malformed(what: "Read By Type Response",
                                              detail: "Attribute Data List of 9 octets is not a whole number of 7-octet entries")) {
            try ATTPDU(bytes: [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00])
        }
        #expect(throws: DecodeError.truncated(what: "Read Request", needed: 1)) { try ATTPDU(bytes: [0x0A, 0x03]) }
        #expect(throws: DecodeError.truncated(what: "ATT PDU", needed: 1)) { try ATTPDU(bytes: []) }
        #expect(throws: DecodeError.invalidValue(what: "Execute Write Request", field: "Flags", value: 2)) {
            try ATTPDU(bytes: [0x18, 0x02])
        }
        do {
            _ = try ATTPDU(bytes: [0x09, 0x00, 0x02, 0x00])
            Issue.record("Length 0 decoded")
        } catch {
            #expect("\(error)".contains("Read By Type Response"))
        }
    }
}
