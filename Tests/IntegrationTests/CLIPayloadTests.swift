import Foundation
import Testing

/// Payload files of `ble write --file`: hostile or wrong files are refused before anything
/// is connected, with exit status 2 and the field index and reason.
@Suite struct CLIPayloadTests {
    func write(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test(arguments: [
        ("{\"fields\": [{\"u8\": 1}, {\"u8\": 256}]}", "payload field 1: 256 is out of range for u8 (0...255)"),
        ("{\"fields\": [{\"u16le\": -1}]}", "payload field 0: -1 is out of range for u16le (0...65535)"),
        ("{\"fields\": [{\"i16le\": 1.5}]}", "payload field 0: \"i16le\" needs a whole number, not 1.5"),
        ("{\"fields\": [{\"u32le\": \"5\"}]}", "payload field 0: \"u32le\" needs an integer, not a string"),
        ("{\"fields\": [{\"hex\": \"0a0\"}]}", "payload field 0: \"hex\" needs whole bytes (an even number of digits)"),
        ("{\"fields\": [{\"hex\": \"zz\"}]}", "payload field 0: \"hex\" holds a non-hex character"),
        ("{\"fields\": [{\"u8\": 1, \"u16le\": 2}]}", "payload field 0: must be an object with exactly one key, like {\"u8\": 1}"),
        ("{\"fields\": [{\"float\": 1}]}", "payload field 0: unknown type \"float\""),
        ("{\"fields\": [{\"padding\": 600}]}", "payload field 0: 600 is out of range for padding (0...512)"),
        ("{\"fields\": [{\"padding\": 500}, {\"string\": \"0123456789abcdef\"}]}", "payload encodes to 516 bytes, more than the 512"),
        ("{\"fields\": [{\"u8\": 99999999999999999999999}]}", "payload field 0: \"u8\" needs a whole number"),
        ("{\"fields\": {\"u8\": 1}}", "payload file has \"fields\" that is not an array"),
        ("[1, 2]", "payload file must hold an object (a mapping)"),
        ("{\"fields\": [", "payload file is not valid JSON: unexpected end of the text (expected a value) at offset 12"),
        ("{\"fields\": [{\"u8\": 1}]} trailing", "payload file is not valid JSON: text after the JSON value at offset 24"),
        (String(repeating: "[", count: 40), "payload file is not valid JSON: unexpected end of the text (expected a value) at offset 40"),
        (String(repeating: "[", count: 40) + String(repeating: "]", count: 40), "payload file is not valid JSON: nested deeper than 16 levels"),
        ("{\"fields\": [{\"string\": \"\\ud800\"}]}", "payload file is not valid JSON: high surrogate \\uD800 without a low surrogate after it at offset 24"),
    ])
    func badPayloadsAreUsageErrors(_ text: String, _ message: String) async throws {
        let file = try write(text)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await BLETool.run(["write", "F0:5E:B1:00:00:02", "-c", "2A19", "--file", file.path])
        #expect(run.status == 2, "\(text): \(run.stderr)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains(message), "\(text): \(run.stderr)")
    }

    /// YAML through libyaml: plain scalars are integers or strings by the field's type, a
    /// quoted scalar is a string; aliases that expand without end and syntax errors are refused.
    @Test(arguments: [
        ("fields:\n  - u8: 256\n", "payload field 0: 256 is out of range for u8 (0...255)"),
        ("fields:\n  - u32le: \"5\"\n", "payload field 0: \"u32le\" needs an integer, not a string"),
        ("fields: [u8: 1\n", "payload file is not valid YAML: line 2, column 1: did not find expected ',' or ']'"),
        ("fields: {u8: 1}\n", "payload file has \"fields\" that is not an array"),
        ("a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nfields: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
         "payload file is not valid YAML: more than 10000 values"),
    ])
    func badYAMLPayloadsAreUsageErrors(_ text: String, _ message: String) async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID().uuidString).yaml")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let run = try await BLETool.run(["write", "F0:5E:B1:00:00:02", "-c", "2A19", "--file", url.path])
        #expect(run.status == 2, "\(text): \(run.stderr)")
        #expect(run.stderr.contains(message), "\(text): \(run.stderr)")
    }

    @Test func oversizedFileIsRefusedUnread() async throws {
        let file = try write("{\"fields\": [" + String(repeating: " ", count: 70_000) + "]}")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await BLETool.run(["write", "F0:5E:B1:00:00:02", "-c", "2A19", "-f", file.path])
        #expect(run.status == 2)
        #expect(run.stderr.contains("more than 65536"))
    }

    @Test func missingFileIsAUsageError() async throws {
        let run = try await BLETool.run(["write", "F0:5E:B1:00:00:02", "-c", "2A19", "--file=/nonexistent/p.json"])
        #expect(run.status == 2)
        #expect(run.stderr == "ble: cannot read payload file /nonexistent/p.json: No such file or directory\n")
    }
}
