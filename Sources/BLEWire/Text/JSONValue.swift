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
///
/// Written straight into UTF-8 bytes (`bytes`, `write(into:)`): a message is one buffer, with
/// no intermediate strings.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Compact single-line text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The text as UTF-8 bytes.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(into: &out)
        return out
    }

    /// Appends the text to `out`.
    public func write(into out: inout String) {
        out += text
    }

    /// Appends the text as UTF-8 to `out`.
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .int(let i): Self.integer(Int64(i), into: &out)
        case .double(let d): Self.number(d, into: &out)
        case .string(let s): Self.quote(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.quote(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func number(_ d: Double, into out: inout [UInt8]) {
        if !d.isFinite {
            out.append(contentsOf: "null".utf8)
        } else if d == d.rounded() && abs(d) <= 9_007_199_254_740_992 {
            integer(Int64(d), into: &out)
        } else {
            out.append(contentsOf: String(d).utf8)
        }
    }

    /// Decimal digits of `v`, with a leading minus when negative.
    static func integer(_ v: Int64, into out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = v.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[i...])
        }
    }

    /// Appends `s` as a JSON string: quotes, backslashes and control characters escaped
    /// (RFC 8259, 7), everything else as it is.
    public static func quote(_ s: String, into out: inout String) {
        var bytes: [UInt8] = []
        quote(s, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// `quote` into UTF-8 bytes. The bytes of a multi-byte UTF-8 sequence are all 0x80 or
    /// above, so they are copied as they are; only ASCII bytes can need an escape.
    public static func quote(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let utf8 = s.utf8
        if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(contentsOf: utf8)
        } else {
            for b in utf8 {
                switch b {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
                case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
                case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
                case ..<0x20:
                    let digits = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(digits[Int(b >> 4)])
                    out.append(digits[Int(b & 0x0F)])
                default: out.append(b)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.bytes == b.bytes }
    public func hash(into h: inout Hasher) { h.combine(bytes) }
}
