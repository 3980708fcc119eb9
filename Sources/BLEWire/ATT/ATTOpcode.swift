/// An Attribute Protocol opcode (Core Spec 5.4, Vol 3, Part F, 3.3.1): bits 0-5 the method,
/// bit 6 the Command Flag, bit 7 the Authentication Signature Flag.
///
///     ATTOpcode.readRequest.responseOpcode   // .readResponse
///     ATTOpcode.signedWriteCommand.isSigned  // true
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let errorResponse = ATTOpcode(0x01)
    public static let exchangeMTURequest = ATTOpcode(0x02)
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    public static let findInformationRequest = ATTOpcode(0x04)
    public static let findInformationResponse = ATTOpcode(0x05)
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    public static let readByTypeRequest = ATTOpcode(0x08)
    public static let readByTypeResponse = ATTOpcode(0x09)
    public static let readRequest = ATTOpcode(0x0A)
    public static let readResponse = ATTOpcode(0x0B)
    public static let readBlobRequest = ATTOpcode(0x0C)
    public static let readBlobResponse = ATTOpcode(0x0D)
    public static let readMultipleRequest = ATTOpcode(0x0E)
    public static let readMultipleResponse = ATTOpcode(0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    public static let writeRequest = ATTOpcode(0x12)
    public static let writeResponse = ATTOpcode(0x13)
    public static let prepareWriteRequest = ATTOpcode(0x16)
    public static let prepareWriteResponse = ATTOpcode(0x17)
    public static let executeWriteRequest = ATTOpcode(0x18)
    public static let executeWriteResponse = ATTOpcode(0x19)
    public static let handleValueNotification = ATTOpcode(0x1B)
    public static let handleValueIndication = ATTOpcode(0x1D)
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    public static let writeCommand = ATTOpcode(0x52)
    public static let signedWriteCommand = ATTOpcode(0xD2)

    /// Bits 0-5.
    @inlinable public var method: UInt8 { rawValue & 0x3F }
    /// Bit 6, the Command Flag: the PDU gets no response.
    @inlinable public var isCommand: Bool { rawValue & 0x40 != 0 }
    /// Bit 7, the Authentication Signature Flag: a 12-octet signature ends the PDU.
    @inlinable public var isSigned: Bool { rawValue & 0x80 != 0 }

    /// The six ATT PDU types (Vol 3, Part F, 3.3), or `.unknown` for opcodes this
    /// specification version does not define.
    public enum Method: Sendable, Hashable {
        case request, response, command, notification, indication, confirmation, unknown
    }

    /// The PDU type of this opcode.
    public var kind: Method {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
             .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
             .prepareWriteRequest, .executeWriteRequest, .readMultipleVariableRequest:
            return .request
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse, .executeWriteResponse,
             .readMultipleVariableResponse:
            return .response
        case .writeCommand, .signedWriteCommand: return .command
        case .handleValueNotification, .multipleHandleValueNotification: return .notification
        case .handleValueIndication: return .indication
        case .handleValueConfirmation: return .confirmation
        default: return isCommand ? .command : .unknown
        }
    }

    /// The opcode that answers this one (besides Error Response): a request's response, an
    /// indication's confirmation; nil for every other opcode.
    public var responseOpcode: ATTOpcode? {
        switch kind {
        case .request: return ATTOpcode(rawValue &+ 1)
        case .indication: return .handleValueConfirmation
        default: return nil
        }
    }

    /// The request this opcode answers, when it is a response (not Error Response).
    public var requestOpcode: ATTOpcode? {
        guard kind == .response, self != .errorResponse else { return nil }
        return ATTOpcode(rawValue &- 1)
    }

    /// The specification's name ("Read By Type Request"), or "Unknown ATT PDU".
    public var name: String {
        switch rawValue {
        case 0x01: return "Error Response"
        case 0x02: return "Exchange MTU Request"
        case 0x03: return "Exchange MTU Response"
        case 0x04: return "Find Information Request"
        case 0x05: return "Find Information Response"
        case 0x06: return "Find By Type Value Request"
        case 0x07: return "Find By Type Value Response"
        case 0x08: return "Read By Type Request"
        case 0x09: return "Read By Type Response"
        case 0x0A: return "Read Request"
        case 0x0B: return "Read Response"
        case 0x0C: return "Read Blob Request"
        case 0x0D: return "Read Blob Response"
        case 0x0E: return "Read Multiple Request"
        case 0x0F: return "Read Multiple Response"
        case 0x10: return "Read By Group Type Request"
        case 0x11: return "Read By Group Type Response"
        case 0x12: return "Write Request"
        case 0x13: return "Write Response"
        case 0x16: return "Prepare Write Request"
        case 0x17: return "Prepare Write Response"
        case 0x18: return "Execute Write Request"
        case 0x19: return "Execute Write Response"
        case 0x1B: return "Handle Value Notification"
        case 0x1D: return "Handle Value Indication"
        case 0x1E: return "Handle Value Confirmation"
        case 0x20: return "Read Multiple Variable Request"
        case 0x21: return "Read Multiple Variable Response"
        case 0x23: return "Multiple Handle Value Notification"
        case 0x52: return "Write Command"
        case 0xD2: return "Signed Write Command"
        default: return "Unknown ATT PDU"
        }
    }

    /// "Read Request (0x0A)".
    public var description: String { "\(name) (\(rawValue.hex))" }
}
