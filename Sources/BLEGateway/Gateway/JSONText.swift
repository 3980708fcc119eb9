/// A JSON value written with its keys in the order given, so payloads read the same every
/// time (and tests can compare them as text).
///
///     JSONText.object([("address", .string("C0:11:22:33:44:55")), ("rssi", .int(-60))]).text
public indirect enum JSONText: Sendable, Hashable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSONText])
    case object([(String, JSONText)])

    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    public var bytes: [UInt8] { Array(text.utf8) }

    func write(into out: inout String) {
        switch self {
        case .string(let s): Self.quote(s, into: &out)
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite { out += d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d) } else { out += "null" }
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (i, (key, value)) in pairs.enumerated() {
                if i > 0 { out += "," }
                Self.quote(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
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

    public static func == (a: JSONText, b: JSONText) -> Bool { a.text == b.text }
    public func hash(into h: inout Hasher) { h.combine(text) }
}

extension Array where Element == UInt8 {
    /// Upper-case hex without separators ("0215A1").
    var hexUpper: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Parses hex text ("0A1b", optional spaces or colons) into bytes; nil when malformed.
func bytes(fromHex text: String) -> [UInt8]? {
    let digits = text.filter { $0 != " " && $0 != ":" }
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        guard let b = UInt8(digits[index..<next], radix: 16) else { return nil }
        out.append(b)
        index = next
    }
    return out
}
