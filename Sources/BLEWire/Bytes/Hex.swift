extension FixedWidthInteger where Self: UnsignedInteger {
    /// The one way numbers of the protocol print in log lines and error texts: "0x", upper-case
    /// digits, zero-padded to the type's width (a UInt16 handle prints 0x0040, a UInt8 opcode 0x1B).
    ///
    ///     "handle \(handle.hex)"   // "handle 0x0040"
    package var hex: String {
        let digits = String(self, radix: 16, uppercase: true)
        let width = Self.bitWidth / 4
        return "0x" + String(repeating: "0", count: Swift.max(0, width - digits.count)) + digits
    }
}
