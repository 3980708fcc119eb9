/// A type that decodes itself from a characteristic or descriptor value.
///
///     struct Counter: GATTDecodable { let n: UInt32; init(gattValue: [UInt8]) throws(GATTValueError) { n = try UInt32(gattValue: gattValue) } }
///     let level = try await peripheral.read(batteryLevel, as: BatteryLevel.self)
public protocol GATTDecodable {
    init(gattValue: [UInt8]) throws(GATTValueError)
}

/// A type that encodes itself as a characteristic or descriptor value.
///
///     try await peripheral.write(UInt16(0x0001), to: controlPoint)
public protocol GATTEncodable {
    var gattValue: [UInt8] { get }
}

/// Why a value did not decode: too short, too long, or a field out of its range.
public enum GATTValueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `type` needs `needed` bytes but the value has `got`.
    case truncated(type: String, needed: Int, got: Int)
    /// The value has bytes beyond what `type` holds.
    case tooLong(type: String, expected: Int, got: Int)
    /// A field holds a value the specification does not allow.
    case invalid(type: String, detail: String)

    public var description: String {
        switch self {
        case .truncated(let t, let n, let g): return "\(t) needs \(n) bytes, the value has \(g)"
        case .tooLong(let t, let e, let g): return "\(t) is \(e) bytes, the value has \(g)"
        case .invalid(let t, let d): return "\(t): \(d)"
        }
    }
}

/// A bounds-checked little-endian cursor over a value (decoders never trap).
struct ValueReader {
    let bytes: [UInt8]
    let type: String
    var offset = 0
    init(_ bytes: [UInt8], _ type: String) { self.bytes = bytes; self.type = type }

    var remaining: Int { bytes.count - offset }

    mutating func need(_ n: Int) throws(GATTValueError) {
        if remaining < n { throw .truncated(type: type, needed: offset + n, got: bytes.count) }
    }
    mutating func u8() throws(GATTValueError) -> UInt8 {
        try need(1); defer { offset += 1 }; return bytes[offset]
    }
    mutating func u16() throws(GATTValueError) -> UInt16 {
        try need(2); defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
    mutating func u32() throws(GATTValueError) -> UInt32 {
        try need(4); defer { offset += 4 }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        return v
    }
    mutating func u64() throws(GATTValueError) -> UInt64 {
        try need(8); defer { offset += 8 }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return v
    }
    func end() throws(GATTValueError) {
        if remaining > 0 { throw .tooLong(type: type, expected: offset, got: bytes.count) }
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE16(_ v: UInt16) { append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8)) }
}

// MARK: Built-in types

extension UInt8: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "UInt8"); self = try r.u8(); try r.end() }
    public var gattValue: [UInt8] { [self] }
}
extension UInt16: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "UInt16"); self = try r.u16(); try r.end() }
    public var gattValue: [UInt8] { var a: [UInt8] = []; a.appendLE16(self); return a }
}
extension UInt32: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "UInt32"); self = try r.u32(); try r.end() }
    public var gattValue: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }
}
extension UInt64: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "UInt64"); self = try r.u64(); try r.end() }
    public var gattValue: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }
}
extension Int8: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "Int8"); self = Int8(bitPattern: try r.u8()); try r.end() }
    public var gattValue: [UInt8] { [UInt8(bitPattern: self)] }
}
extension Int16: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "Int16"); self = Int16(bitPattern: try r.u16()); try r.end() }
    public var gattValue: [UInt8] { UInt16(bitPattern: self).gattValue }
}
extension Int32: GATTDecodable, GATTEncodable {
    public init(gattValue: [UInt8]) throws(GATTValueError) { var r = ValueReader(gattValue, "Int32"); self = Int32(bitPattern: try r.u32()); try r.end() }
    public var gattValue: [UInt8] { UInt32(bitPattern: self).gattValue }
}
extension Array: GATTDecodable, GATTEncodable where Element == UInt8 {
    public init(gattValue: [UInt8]) { self = gattValue }
    public var gattValue: [UInt8] { self }
}
extension String: GATTDecodable, GATTEncodable {
    /// UTF-8 (GATT «utf8s»); trailing NUL padding is dropped.
    public init(gattValue: [UInt8]) throws(GATTValueError) {
        var bytes = gattValue[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw .invalid(type: "String", detail: "not valid UTF-8")
        }
        self = s
    }
    public var gattValue: [UInt8] { Array(utf8) }
}
