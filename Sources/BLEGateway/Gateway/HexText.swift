import BLECore

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
