/// Octets from the hex the specification prints (spaces ignored), most significant first.
func hex(_ s: String) -> [UInt8] {
    let digits = s.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

/// A 128-bit value as the specification prints it.
func u128(_ s: String) -> UInt128 { UInt128(bigEndianBytes: hex(s)) }
