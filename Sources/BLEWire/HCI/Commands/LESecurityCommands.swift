/// Encryption commands (Vol 4, Part E, 7.8.24 to 7.8.26). Keys are 128-bit values sent
/// least significant octet first.
extension HCICommand {
    /// HCI_LE_Enable_Encryption (7.8.24).
    public static func leEnableEncryption(handle: UInt16, random: UInt64, ediv: UInt16, longTermKey: UInt128) -> HCICommandPacket {
        LEEnableEncryption(handle: handle, random: random, ediv: ediv, longTermKey: longTermKey).packet
    }
    /// HCI_LE_Long_Term_Key_Request_Reply (7.8.25).
    public static func leLongTermKeyRequestReply(handle: UInt16, longTermKey: UInt128) -> HCICommandPacket {
        LELongTermKeyRequestReply(handle: handle, longTermKey: longTermKey).packet
    }
    /// HCI_LE_Long_Term_Key_Request_Negative_Reply (7.8.26).
    public static func leLongTermKeyRequestNegativeReply(handle: UInt16) -> HCICommandPacket { handleOnly(0x201B, handle) }

    /// HCI_LE_Enable_Encryption parameters (7.8.24): Connection_Handle, Random_Number (8 octets),
    /// Encrypted_Diversifier, Long_Term_Key (16 octets).
    public struct LEEnableEncryption: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2019)
        public var handle: UInt16
        public var random: UInt64
        public var ediv: UInt16
        public var longTermKey: UInt128

        public init(handle: UInt16, random: UInt64, ediv: UInt16, longTermKey: UInt128) {
            self.handle = handle
            self.random = random
            self.ediv = ediv
            self.longTermKey = longTermKey
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Enable_Encryption")
            handle = try r.u16(); random = try r.u64(); ediv = try r.u16(); longTermKey = try r.u128()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(random); out.appendLE(ediv); out.appendLE(longTermKey)
        }
    }

    /// HCI_LE_Long_Term_Key_Request_Reply parameters (7.8.25).
    public struct LELongTermKeyRequestReply: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x201A)
        public var handle: UInt16
        public var longTermKey: UInt128

        public init(handle: UInt16, longTermKey: UInt128) {
            self.handle = handle
            self.longTermKey = longTermKey
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Long_Term_Key_Request_Reply")
            handle = try r.u16(); longTermKey = try r.u128()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(longTermKey)
        }
    }
}
