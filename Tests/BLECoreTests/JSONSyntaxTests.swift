import BLECore
import Testing
import BLEWire

/// `JSONSyntax.firstError`: the texts of RFC 8259 section 13 are well-formed; each mistake of
/// the grammar (sections 2-7) is found at its byte offset, and any bytes give an answer.
@Suite struct JSONSyntaxTests {
    /// RFC 8259, 13 (Examples): an object, an array of two objects, and three texts that are
    /// only values.
    @Test(arguments: [
        #"""
        {
          "Image": {
            "Width":  800,
            "Height": 600,
            "Title":  "View from 15th Floor",
            "Thumbnail": {
              "Url":    "http://www.example.com/image/481989943",
              "Height": 125,
              "Width":  100
            },
            "Animated" : false,
            "IDs": [116, 943, 234, 38793]
          }
        }
        """#,
        #"""
        [
          {
             "precision": "zip",
             "Latitude":  37.7668,
             "Longitude": -122.3959,
             "Address":   "",
             "City":      "SAN FRANCISCO",
             "State":     "CA",
             "Zip":       "94107",
             "Country":   "US"
          },
          {
             "precision": "zip",
             "Latitude":  37.371991,
             "Longitude": -122.026020,
             "Address":   "",
             "City":      "SUNNYVALE",
             "State":     "CA",
             "Zip":       "94085",
             "Country":   "US"
          }
        ]
        """#,
        #""Hello world!""#, "42", "true",
        // RFC 8259, 7: an escaped surrogate pair (U+1D11E, G clef), and the short escapes.
        #"["\uD834\uDD1E", "\"\\\/\b\f\n\r\t", null, -0.5e+10, 0, 1E3, {}, []]"#,
    ])
    func wellFormed(_ text: String) {
        #expect(JSONSyntax.firstError(in: Array(text.utf8)) == nil, "\(text)")
    }

    @Test(arguments: [
        ("", 0, "unexpected end of the text (expected a value)"),
        ("   ", 3, "unexpected end of the text (expected a value)"),
        (#"{"a": [1,]}"#, 9, "invalid value"),
        (#"{"a" 1}"#, 5, "expected ':' after the member name"),
        (#"{a: 1}"#, 1, "expected a member name in double quotes"),
        (#"{"a": 1,}"#, 8, "expected a member name in double quotes"),
        (#"{"a": 1"#, 7, "unexpected end of the text (expected ',' or '}')"),
        (#"[1 2]"#, 3, "expected ',' or ']'"),
        (#"[1] x"#, 4, "text after the JSON value"),
        (#"["abc"#, 1, "unterminated string"),
        ("[\"a\u{01}\"]", 3, "control character 0x01 in a string (escape it)"),
        (#"["\x"]"#, 2, "invalid escape in a string"),
        (#"["\u12G4"]"#, 2, "\\u escape needs four hex digits"),
        (#"["\uD800"]"#, 2, "high surrogate \\uD800 without a low surrogate after it"),
        (#"["\uD800\u0041"]"#, 2, "high surrogate \\uD800 without a low surrogate after it"),
        (#"["\uDC00"]"#, 2, "low surrogate \\uDC00 without a high surrogate before it"),
        ("[01]", 1, "invalid number (leading zero)"),
        ("[-]", 1, "invalid number (a digit must follow '-')"),
        ("[1.]", 1, "invalid number (a digit must follow '.')"),
        ("[1e+]", 1, "invalid number (a digit must follow the exponent)"),
        ("[tru]", 1, "invalid value"),
        ("[+1]", 1, "invalid value"),
    ])
    func malformed(_ text: String, _ offset: Int, _ reason: String) {
        let error = JSONSyntax.firstError(in: Array(text.utf8))
        #expect(error == JSONSyntaxError(offset: offset, reason: reason), "\(text)")
        #expect(error?.description == "\(reason) at offset \(offset)")
    }

    /// Deep nesting is counted on a stack, not by recursion: 100,000 open brackets end in an
    /// error at the end of the text, not a stack overflow.
    @Test func deepNestingIsNoRecursion() {
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(JSONSyntax.firstError(in: open) == JSONSyntaxError(offset: 100_000, reason: "unexpected end of the text (expected a value)"))
        #expect(JSONSyntax.firstError(in: open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)) == nil)
    }
}
