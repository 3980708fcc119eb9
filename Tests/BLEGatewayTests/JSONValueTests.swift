import BLECore
import BLEGateway
import Testing
import BLEWire

/// The one JSON writer (BLECore's `JSONValue`, used by `ble --json` and the gateway's
/// payloads): exact text for numbers, strings (RFC 8259, 6 and 7) and member order.
@Suite struct JSONValueTests {
    @Test(arguments: [
        (45.0, "45"), (-60.0, "-60"), (0.0, "0"), (-0.0, "0"), (23.2, "23.2"), (-1.5, "-1.5"),
        (1e-7, "1e-07"), (1e15, "1000000000000000"), (9_007_199_254_740_992.0, "9007199254740992"), (1e16, "1e+16"),
        (Double.infinity, "null"), (-Double.infinity, "null"), (Double.nan, "null"),
    ])
    func numbers(_ value: Double, _ text: String) {
        #expect(JSONValue.double(value).text == text)
    }

    @Test func stringsEscapeQuotesBackslashesAndControlCharacters() {
        #expect(JSONValue.string("a\"b\\c\n\r\t\u{1B}\u{7F}é").text == #""a\"b\\c\n\r\t\u001b"# + "\u{7F}é\"")
    }

    @Test func membersKeepTheirOrder() {
        let v = JSONValue.object([("z", .int(1)), ("a", .array([.bool(true), .null, .string("x")])), ("m", .object([]))])
        #expect(v.text == #"{"z":1,"a":[true,null,"x"],"m":{}}"#)
        #expect(v.bytes == Array(v.text.utf8))
        // The gateway's name for it is the same type.
        #expect(JSONValue.int(-3) == JSONValue.int(-3))
    }
}
