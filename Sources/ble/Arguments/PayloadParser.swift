// No imports: the encoder works on a value tree that the JSON and YAML readers build.

/// Why a payload file was refused. Every case names where and what to fix.
enum PayloadError: Error, Equatable, CustomStringConvertible {
    /// The file is larger than `PayloadParser.maximumInputSize`.
    case inputTooLarge(bytes: Int, limit: Int)
    /// Not valid JSON or YAML (`format`); `detail` says where and why.
    case syntax(format: String, detail: String)
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
        case .syntax(let format, let detail):
            return "payload file is not valid \(format): \(detail)"
        case .shape(let reason):
            return "payload file \(reason); write {\"fields\": [{\"u8\": 1}, {\"u16le\": 513}, {\"string\": \"hi\"}, {\"hex\": \"0a0b\"}]}"
        case .field(let index, let reason):
            return "payload field \(index): \(reason)"
        case .valueTooLong(let n, let limit):
            return "payload encodes to \(n) bytes, more than the \(limit) a characteristic value can hold"
        }
    }
}

/// Typed payload files for `ble write --file`: a JSON or YAML document (read by
/// `PayloadFile`) whose "fields" list holds typed values, encoded in order.
///
///     {"fields": [{"u8": 1}, {"u16le": 513}, {"u32le": 5}, {"i16le": -2},
///                 {"string": "hi"}, {"hex": "0a0b"}, {"padding": 3}]}
///
///     fields: [{u8: 1}, {u16le: 513}, {string: hi}, {hex: 0a0b}]
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

    /// Encodes the fields of a document read by `PayloadFile`.
    static func encode(_ document: PayloadValue) throws(PayloadError) -> [UInt8] {
        guard case .object(let members) = document else { throw .shape("must hold an object (a mapping)") }
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

    private static func encode(type: String, value: PayloadValue, index: Int, into out: inout [UInt8]) throws(PayloadError) {
        func integer(_ min: Int64, _ max: UInt64) throws(PayloadError) -> UInt64 {
            let text: String
            switch value {
            case .number(let t), .plain(let t): text = t
            default: throw .field(index: index, reason: "\"\(type)\" needs an integer, not \(value.kind)")
            }
            guard let n = Self.integer(text) else {
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
            guard let s = value.text else { throw .field(index: index, reason: "\"string\" needs a string, not \(value.kind)") }
            guard out.count + s.utf8.count <= maximumValueLength else {
                throw .valueTooLong(bytes: out.count + s.utf8.count, limit: maximumValueLength)
            }
            out += s.utf8
        case "hex":
            guard let s = value.text else { throw .field(index: index, reason: "\"hex\" needs a string of hex digits, not \(value.kind)") }
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

    enum Integer { case negative(Int64), positive(UInt64) }

    /// A decimal integer, or nil when it is not one or does not fit 64 bits.
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

/// A payload document as the readers give it: JSON numbers and YAML plain scalars keep their
/// text, so the encoder range-checks them itself.
indirect enum PayloadValue {
    case null
    case bool(Bool)
    /// A JSON number.
    case number(String)
    /// A YAML plain (unquoted) scalar: an integer or a string, by the field's type.
    case plain(String)
    /// A JSON string or a quoted YAML scalar.
    case string(String)
    case array([PayloadValue])
    case object([(String, PayloadValue)])

    var kind: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .plain: return "a plain scalar"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The text of a string or a plain scalar.
    var text: String? {
        switch self {
        case .string(let s), .plain(let s): return s
        default: return nil
        }
    }
}
