// Self-contained (no imports) so a fuzz harness can compile this file alone.

/// Why a payload file was refused. Every case names where and what to fix.
enum PayloadError: Error, Equatable, CustomStringConvertible {
    /// The file is larger than `PayloadParser.maximumInputSize`.
    case inputTooLarge(bytes: Int, limit: Int)
    /// Not valid JSON at byte `offset`.
    case syntax(offset: Int, reason: String)
    /// The document is not an object with a "fields" array.
    case shape(String)
    /// Field number `index` (from 0) is wrong.
    case field(index: Int, reason: String)
    /// The encoded value would be longer than `limit` bytes.
    case valueTooLong(bytes: Int, limit: Int)

    var description: String {
        switch self {
        case .inputTooLarge(let n, let limit):
            return "payload file is \(n) bytes, more than \(limit); a characteristic value is at most 512 bytes"
        case .syntax(let offset, let reason):
            return "payload file is not valid JSON at byte \(offset): \(reason)"
        case .shape(let reason):
            return "payload file \(reason); write {\"fields\": [{\"u8\": 1}, {\"u16le\": 513}, {\"string\": \"hi\"}, {\"hex\": \"0a0b\"}]}"
        case .field(let index, let reason):
            return "payload field \(index): \(reason)"
        case .valueTooLong(let n, let limit):
            return "payload encodes to \(n) bytes, more than the \(limit) a characteristic value can hold"
        }
    }
}

/// Typed payload files for `ble write --file`: a JSON object whose "fields" array lists
/// typed values, encoded in order.
///
///     {"fields": [{"u8": 1}, {"u16le": 513}, {"u32le": 5}, {"i16le": -2},
///                 {"string": "hi"}, {"hex": "0a0b"}, {"padding": 3}]}
///
/// Field types: u8, i8, u16le, u16be, i16le, i16be, u24le, u32le, u32be, i32le, i32be,
/// u64le, i64le (integers, range-checked), string (UTF-8), hex (bytes), padding (N zero
/// bytes). A total function: any input gives bytes or a `PayloadError`; input, nesting,
/// field count and output are bounded.
enum PayloadParser {
    static let maximumInputSize = 64 * 1024
    /// The longest attribute value (Core Spec Vol 3, Part F, 3.2.9).
    static let maximumValueLength = 512
    static let maximumDepth = 16

    static func parse(_ input: [UInt8]) throws(PayloadError) -> [UInt8] {
        guard input.count <= maximumInputSize else { throw .inputTooLarge(bytes: input.count, limit: maximumInputSize) }
        var parser = MiniJSON(input, maximumDepth: maximumDepth)
        let document = try parser.document()
        guard case .object(let members) = document else { throw .shape("must hold a JSON object") }
        guard let fieldsValue = members.last(where: { $0.0 == "fields" })?.1 else { throw .shape("has no \"fields\" array") }
        guard case .array(let fields) = fieldsValue else { throw .shape("has \"fields\" that is not an array") }
        var out: [UInt8] = []
        for (index, field) in fields.enumerated() {
            guard case .object(let kv) = field, kv.count == 1 else {
                throw .field(index: index, reason: "must be an object with exactly one key, like {\"u8\": 1}")
            }
            let (type, value) = kv[0]
            try encode(type: type, value: value, index: index, into: &out)
            guard out.count <= maximumValueLength else { throw .valueTooLong(bytes: out.count, limit: maximumValueLength) }
        }
        return out
    }

    private static func encode(type: String, value: MiniJSON.Value, index: Int, into out: inout [UInt8]) throws(PayloadError) {
        func integer(_ min: Int64, _ max: UInt64) throws(PayloadError) -> UInt64 {
            guard case .number(let text) = value else {
                throw .field(index: index, reason: "\"\(type)\" needs an integer, not \(value.kind)")
            }
            guard let n = MiniJSON.integer(text) else {
                throw .field(index: index, reason: "\"\(type)\" needs a whole number, not \(text.prefix(40))")
            }
            switch n {
            case .negative(let v):
                guard v >= min else { throw .field(index: index, reason: "\(text.prefix(40)) is out of range for \(type) (\(min)...\(max))") }
                return UInt64(bitPattern: v)
            case .positive(let v):
                guard v <= max else { throw .field(index: index, reason: "\(text.prefix(40)) is out of range for \(type) (\(min)...\(max))") }
                return v
            }
        }
        func le(_ v: UInt64, _ n: Int) { for i in 0..<n { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
        func be(_ v: UInt64, _ n: Int) { for i in (0..<n).reversed() { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
        switch type {
        case "u8": le(try integer(0, 0xFF), 1)
        case "i8": le(try integer(-0x80, 0x7F), 1)
        case "u16le": le(try integer(0, 0xFFFF), 2)
        case "u16be": be(try integer(0, 0xFFFF), 2)
        case "i16le": le(try integer(-0x8000, 0x7FFF), 2)
        case "i16be": be(try integer(-0x8000, 0x7FFF), 2)
        case "u24le": le(try integer(0, 0xFF_FFFF), 3)
        case "u32le": le(try integer(0, 0xFFFF_FFFF), 4)
        case "u32be": be(try integer(0, 0xFFFF_FFFF), 4)
        case "i32le": le(try integer(-0x8000_0000, 0x7FFF_FFFF), 4)
        case "i32be": be(try integer(-0x8000_0000, 0x7FFF_FFFF), 4)
        case "u64le": le(try integer(0, UInt64.max), 8)
        case "i64le": le(try integer(Int64.min, UInt64(Int64.max)), 8)
        case "string":
            guard case .string(let s) = value else { throw .field(index: index, reason: "\"string\" needs a JSON string, not \(value.kind)") }
            guard out.count + s.utf8.count <= maximumValueLength else {
                throw .valueTooLong(bytes: out.count + s.utf8.count, limit: maximumValueLength)
            }
            out += s.utf8
        case "hex":
            guard case .string(let s) = value else { throw .field(index: index, reason: "\"hex\" needs a string of hex digits, not \(value.kind)") }
            var digits: [UInt8] = []
            for c in s.utf8 where c != 0x20 && c != 0x3A {
                guard let d = hexValue(c) else { throw .field(index: index, reason: "\"hex\" holds a non-hex character") }
                digits.append(d)
                guard digits.count <= 2 * maximumValueLength else { throw .valueTooLong(bytes: out.count + digits.count / 2, limit: maximumValueLength) }
            }
            guard digits.count % 2 == 0 else { throw .field(index: index, reason: "\"hex\" needs whole bytes (an even number of digits)") }
            var i = 0
            while i < digits.count {
                out.append(digits[i] << 4 | digits[i + 1])
                i += 2
            }
        case "padding":
            let n = try integer(0, UInt64(maximumValueLength))
            guard out.count + Int(n) <= maximumValueLength else { throw .valueTooLong(bytes: out.count + Int(n), limit: maximumValueLength) }
            out += repeatElement(0, count: Int(n))
        default:
            throw .field(index: index, reason: "unknown type \"\(type.prefix(40))\"; use u8, i8, u16le, u16be, i16le, i16be, u24le, u32le, u32be, i32le, i32be, u64le, i64le, string, hex or padding")
        }
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}

/// A small strict JSON reader (RFC 8259) for payload files: bounded nesting, numbers kept as
/// their text, every failure a `PayloadError.syntax` with the byte offset.
struct MiniJSON {
    enum Value {
        case null, bool(Bool), number(String), string(String), array([Value]), object([(String, Value)])
        var kind: String {
            switch self {
            case .null: return "null"
            case .bool: return "a boolean"
            case .number: return "a number"
            case .string: return "a string"
            case .array: return "an array"
            case .object: return "an object"
            }
        }
    }

    enum Integer { case negative(Int64), positive(UInt64) }

    private let bytes: [UInt8]
    private var i = 0
    private let maximumDepth: Int

    init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func document() throws(PayloadError) -> Value {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        let v = try value(depth: 0)
        skipSpace()
        guard i == bytes.count else { throw fail("unexpected text after the JSON value") }
        return v
    }

    private func fail(_ reason: String) -> PayloadError { .syntax(offset: i, reason: reason) }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func value(depth: Int) throws(PayloadError) -> Value {
        guard depth <= maximumDepth else { throw fail("nested deeper than \(maximumDepth) levels") }
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of file") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members: [(String, Value)] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key") }
                let key = try string()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                i += 1
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}' in an object")
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [Value] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of file in an array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']' in an array")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try number())
        default:
            throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws(PayloadError) {
        for c in word.utf8 {
            guard i < bytes.count, bytes[i] == c else { throw fail("expected \(word)") }
            i += 1
        }
    }

    private mutating func number() throws(PayloadError) -> String {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int {
            let s = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            return i - s
        }
        guard digits() > 0 else { throw fail("expected digits") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw fail("expected digits after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("expected digits in the exponent") }
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    private mutating func string() throws(PayloadError) -> String {
        i += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() {
            if !raw.isEmpty { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw.removeAll() }
        }
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            i += 1
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { throw fail("control character in a string") }
            if c != UInt8(ascii: "\\") { raw.append(c); continue }
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): raw.append(0x22)
            case UInt8(ascii: "\\"): raw.append(0x5C)
            case UInt8(ascii: "/"): raw.append(0x2F)
            case UInt8(ascii: "b"): raw.append(0x08)
            case UInt8(ascii: "f"): raw.append(0x0C)
            case UInt8(ascii: "n"): raw.append(0x0A)
            case UInt8(ascii: "r"): raw.append(0x0D)
            case UInt8(ascii: "t"): raw.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("lone high surrogate in \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad low surrogate in \\u escape") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw fail("\\u escape is not a Unicode scalar") }
                flush()
                scalars.append(scalar)
            default:
                throw fail("unknown escape")
            }
        }
        flush()
        return String(scalars)
    }

    private mutating func hex4() throws(PayloadError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw fail("bad hex digit in \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    /// A JSON number text as a whole number, or nil when it has a fraction, an exponent or
    /// does not fit 64 bits.
    static func integer(_ text: String) -> Integer? {
        var utf8 = Substring(text).utf8[...]
        let negative = utf8.first == UInt8(ascii: "-")
        if negative { utf8 = utf8.dropFirst() }
        guard !utf8.isEmpty else { return nil }
        var v: UInt64 = 0
        for c in utf8 {
            guard c >= 0x30, c <= 0x39 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(UInt64(c - 0x30))
            if o1 || o2 { return nil }
            v = a
        }
        if negative {
            if v == 0 { return .positive(0) }
            guard v <= UInt64(Int64.max) + 1 else { return nil }
            return .negative(v == UInt64(Int64.max) + 1 ? Int64.min : -Int64(v))
        }
        return .positive(v)
    }
}
