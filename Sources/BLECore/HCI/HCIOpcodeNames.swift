extension HCIOpcode {
    /// Command names from the Core Specification, by opcode.
    static let names: [UInt16: String] = [
        0x0C03: "HCI_Reset",
    ]
}
