/// A JSON value written compactly on one line, object keys in the order given, so the same
/// value always gives the same text (and tests can compare it as text). The one JSON writer
/// of the `ble` tool's output and the gateway's payloads.
///
/// Numbers: a `.double` with a whole value up to 2^53 in magnitude (where every integer is
/// exact) is written as an integer (`45`, not `45.0`); other finite values in Swift's
/// shortest round-trip form (`23.2`, `1e-07`, `1e+16`); infinities and NaN as `null`, since
/// JSON has no text for them.
///
///     JSONValue.object([("address", .string("C0:11:22:33:44:55")), ("rssi", .int(-60))]).text
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Compact single-line text.
    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    /// The text as UTF-8 bytes.
    public var bytes: [UInt8] { Array(text.utf8) }

    /// Appends the text to `out`.
    public func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): Self.number(d, into: &out)
        case .string(let s): Self.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                Self.quote(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    static func number(_ d: Double, into out: inout String) {
        if !d.isFinite {
            out += "null"
        } else if d == d.rounded() && abs(d) <= 9_007_199_254_740_992 {
            out += String(Int64(d))
        } else {
            out += String(d)
        }
    }

    /// Appends `s` as a JSON string: quotes, backslashes and control characters escaped
    /// (RFC 8259, 7), everything else as it is.
    public static func quote(_ s: String, into out: inout String) {
        out += "\""
        if !needsEscape(s) {
            out += s
            out += "\""
            return
        }
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }

    /// Whether `s` holds a quote, a backslash or a control character: a byte scan of its
    /// UTF-8 (every byte of a multi-byte sequence is 0x80 or above, so none matches).
    static func needsEscape(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { bytes in
            for b in bytes where b < 0x20 || b == 0x22 || b == 0x5C { return true }
            return false
        }
    }

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.text == b.text }
    public func hash(into h: inout Hasher) { h.combine(text) }
}
