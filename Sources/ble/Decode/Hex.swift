/// Upper-case hex, zero-padded to `width` digits.
func hex<T: BinaryInteger>(_ v: T, width: Int) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

/// ASCII of the lowercase hex digits.
let lowercaseHexDigits: [UInt8] = Array("0123456789abcdef".utf8)

/// "0a 0b 0c" style lowercase hex of bytes, without separators: "0a0b0c". Written as UTF-8
/// bytes into the string's own storage: a capture prints this for most packets.
func hexString<C: Collection>(_ bytes: C, separator: String = "") -> String where C.Element == UInt8 {
    let count = bytes.count
    guard count > 0 else { return "" }
    let separatorBytes = Array(separator.utf8)
    let length = count * 2 + (count - 1) * separatorBytes.count
    return String(unsafeUninitializedCapacity: length) { out in
        var i = 0
        for b in bytes {
            if i > 0 {
                for s in separatorBytes { out[i] = s; i += 1 }
            }
            out[i] = lowercaseHexDigits[Int(b >> 4)]
            out[i + 1] = lowercaseHexDigits[Int(b & 0x0F)]
            i += 2
        }
        return i
    }
}
