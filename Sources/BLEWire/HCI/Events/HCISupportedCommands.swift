/// The Supported_Commands bitmap of HCI_Read_Local_Supported_Commands (Vol 4, Part E, 6.27):
/// 64 octets, one bit per command at a fixed octet and bit.
///
///     if commands.supports(HCICommand.LESetExtendedScanParameters.opcode) { ... }
public struct HCISupportedCommands: Hashable, Sendable {
    /// Exactly 64 octets (shorter input is zero-padded, longer input cut).
    public let octets: [UInt8]

    public init(octets: [UInt8]) {
        var o = Array(octets.prefix(64))
        if o.count < 64 { o.append(contentsOf: repeatElement(0, count: 64 - o.count)) }
        self.octets = o
    }

    /// True when the bit at `octet`, `bit` is set.
    @inlinable
    public func isSet(octet: Int, bit: Int) -> Bool {
        octet >= 0 && octet < octets.count && bit >= 0 && bit < 8 && octets[octet] & (1 << UInt8(bit)) != 0
    }

    /// Whether the controller reports `opcode` as supported; nil when the opcode is not in the
    /// table below (commands this stack uses).
    public func supports(_ opcode: HCIOpcode) -> Bool? {
        guard let (octet, bit) = Self.positions[opcode.rawValue] else { return nil }
        return isSet(octet: octet, bit: bit)
    }

    /// Octet and bit of each command in Table 6.27.
    public static let positions: [UInt16: (octet: Int, bit: Int)] = [
        0x0406: (0, 5),   // Disconnect
        0x041D: (2, 7),   // Read Remote Version Information
        0x0C01: (5, 6),   // Set Event Mask
        0x0C03: (5, 7),   // Reset
        0x1001: (14, 3),  // Read Local Version Information
        0x1003: (14, 5),  // Read Local Supported Features
        0x1004: (14, 6),  // Read Local Extended Features
        0x1005: (14, 7),  // Read Buffer Size
        0x1009: (15, 1),  // Read BD_ADDR
        0x1405: (15, 5),  // Read RSSI
        0x1408: (20, 4),  // Read Encryption Key Size
        0x0C63: (22, 2),  // Set Event Mask Page 2
        0x0C6C: (24, 5),  // Read LE Host Support
        0x0C6D: (24, 6),  // Write LE Host Support
        0x2001: (25, 0),  // LE Set Event Mask
        0x2002: (25, 1),  // LE Read Buffer Size [v1]
        0x2003: (25, 2),  // LE Read Local Supported Features
        0x2005: (25, 4),  // LE Set Random Address
        0x2006: (25, 5),  // LE Set Advertising Parameters
        0x2007: (25, 6),  // LE Read Advertising Physical Channel Tx Power
        0x2008: (25, 7),  // LE Set Advertising Data
        0x2009: (26, 0),  // LE Set Scan Response Data
        0x200A: (26, 1),  // LE Set Advertising Enable
        0x200B: (26, 2),  // LE Set Scan Parameters
        0x200C: (26, 3),  // LE Set Scan Enable
        0x200D: (26, 4),  // LE Create Connection
        0x200E: (26, 5),  // LE Create Connection Cancel
        0x200F: (26, 6),  // LE Read Filter Accept List Size
        0x2010: (26, 7),  // LE Clear Filter Accept List
        0x2011: (27, 0),  // LE Add Device To Filter Accept List
        0x2012: (27, 1),  // LE Remove Device From Filter Accept List
        0x2013: (27, 2),  // LE Connection Update
        0x2014: (27, 3),  // LE Set Host Channel Classification
        0x2015: (27, 4),  // LE Read Channel Map
        0x2016: (27, 5),  // LE Read Remote Features
        0x2017: (27, 6),  // LE Encrypt
        0x2018: (27, 7),  // LE Rand
        0x2019: (28, 0),  // LE Enable Encryption
        0x201A: (28, 1),  // LE Long Term Key Request Reply
        0x201B: (28, 2),  // LE Long Term Key Request Negative Reply
        0x201C: (28, 3),  // LE Read Supported States
        0x2020: (33, 4),  // LE Remote Connection Parameter Request Reply
        0x2021: (33, 5),  // LE Remote Connection Parameter Request Negative Reply
        0x2022: (33, 6),  // LE Set Data Length
        0x2023: (33, 7),  // LE Read Suggested Default Data Length
        0x2024: (34, 0),  // LE Write Suggested Default Data Length
        0x2025: (34, 1),  // LE Read Local P-256 Public Key
        0x2026: (34, 2),  // LE Generate DHKey [v1]
        0x2027: (34, 3),  // LE Add Device To Resolving List
        0x2028: (34, 4),  // LE Remove Device From Resolving List
        0x2029: (34, 5),  // LE Clear Resolving List
        0x202A: (34, 6),  // LE Read Resolving List Size
        0x202B: (34, 7),  // LE Read Peer Resolvable Address
        0x202C: (35, 0),  // LE Read Local Resolvable Address
        0x202D: (35, 1),  // LE Set Address Resolution Enable
        0x202E: (35, 2),  // LE Set Resolvable Private Address Timeout
        0x202F: (35, 3),  // LE Read Maximum Data Length
        0x2030: (35, 4),  // LE Read PHY
        0x2031: (35, 5),  // LE Set Default PHY
        0x2032: (35, 6),  // LE Set PHY
        0x2035: (36, 1),  // LE Set Advertising Set Random Address
        0x2036: (36, 2),  // LE Set Extended Advertising Parameters
        0x2037: (36, 3),  // LE Set Extended Advertising Data
        0x2038: (36, 4),  // LE Set Extended Scan Response Data
        0x2039: (36, 5),  // LE Set Extended Advertising Enable
        0x203A: (36, 6),  // LE Read Maximum Advertising Data Length
        0x203B: (36, 7),  // LE Read Number of Supported Advertising Sets
        0x203C: (37, 0),  // LE Remove Advertising Set
        0x203D: (37, 1),  // LE Clear Advertising Sets
        0x2041: (37, 5),  // LE Set Extended Scan Parameters
        0x2042: (37, 6),  // LE Set Extended Scan Enable
        0x2043: (37, 7),  // LE Extended Create Connection
        0x204E: (39, 2),  // LE Set Privacy Mode
        0x2060: (41, 5),  // LE Read Buffer Size [v2]
    ]
}
