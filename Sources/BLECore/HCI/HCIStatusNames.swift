extension HCIStatus {
    /// Names of the error codes in Core Spec Vol 1, Part F, 1.3.
    static let names: [UInt8: String] = [
        0x00: "Success",
        0x02: "Unknown Connection Identifier",
        0x0C: "Command Disallowed",
        0x13: "Remote User Terminated Connection",
        0x16: "Connection Terminated By Local Host",
        0x3E: "Connection Failed to be Established",
    ]
}
