/// Upper-case hex, zero-padded to `width` digits.
func hex<T: BinaryInteger>(_ v: T, width: Int) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

/// "0a 0b 0c" style lowercase hex of bytes, without separators: "0a0b0c".
func hexString<C: Collection>(_ bytes: C, separator: String = "") -> String where C.Element == UInt8 {
    let digits: [Character] = Array("0123456789abcdef")
    var s = ""
    s.reserveCapacity(bytes.count * (2 + separator.count))
    var first = true
    for b in bytes {
        if !first { s += separator }
        first = false
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 0x0F)])
    }
    return s
}
