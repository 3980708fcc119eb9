/// Event and LE subevent names of the Core Specification (Vol 4, Part E, 7.7), for `ble decode`.
enum HCIEventNames {
    static func event(_ code: UInt8) -> String {
        switch code {
        case 0x01: return "Inquiry Complete"
        case 0x02: return "Inquiry Result"
        case 0x03: return "Connection Complete"
        case 0x04: return "Connection Request"
        case 0x05: return "Disconnection Complete"
        case 0x06: return "Authentication Complete"
        case 0x07: return "Remote Name Request Complete"
        case 0x08: return "Encryption Change"
        case 0x0B: return "Read Remote Supported Features Complete"
        case 0x0C: return "Read Remote Version Information Complete"
        case 0x0E: return "Command Complete"
        case 0x0F: return "Command Status"
        case 0x10: return "Hardware Error"
        case 0x13: return "Number Of Completed Packets"
        case 0x1A: return "Data Buffer Overflow"
        case 0x2F: return "Extended Inquiry Result"
        case 0x30: return "Encryption Key Refresh Complete"
        case 0x3E: return "LE Meta"
        case 0x57: return "Authenticated Payload Timeout Expired"
        case 0x59: return "Encryption Change v2"
        case 0xFF: return "Vendor"
        default: return "Event 0x\(hex(code, width: 2))"
        }
    }

    static func leSubevent(_ code: UInt8) -> String {
        switch code {
        case 0x01: return "LE Connection Complete"
        case 0x02: return "LE Advertising Report"
        case 0x03: return "LE Connection Update Complete"
        case 0x04: return "LE Read Remote Features Complete"
        case 0x05: return "LE Long Term Key Request"
        case 0x06: return "LE Remote Connection Parameter Request"
        case 0x07: return "LE Data Length Change"
        case 0x08: return "LE Read Local P-256 Public Key Complete"
        case 0x09: return "LE Generate DHKey Complete"
        case 0x0A: return "LE Enhanced Connection Complete"
        case 0x0B: return "LE Directed Advertising Report"
        case 0x0C: return "LE PHY Update Complete"
        case 0x0D: return "LE Extended Advertising Report"
        case 0x12: return "LE Advertising Set Terminated"
        case 0x13: return "LE Scan Request Received"
        case 0x14: return "LE Channel Selection Algorithm"
        case 0x29: return "LE Enhanced Connection Complete v2"
        default: return "LE subevent 0x\(hex(code, width: 2))"
        }
    }
}
