/// An Error Response error code (Core Spec 5.4, Vol 3, Part F, 3.4.1.1, Table 3.4; 0xE0-0xFF
/// from the Core Specification Supplement, Part B, 1.2). Printed with its specification name.
///
///     ATTErrorCode.insufficientAuthentication.description   // "Insufficient Authentication (0x05)"
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(0x01)
    public static let readNotPermitted = ATTErrorCode(0x02)
    public static let writeNotPermitted = ATTErrorCode(0x03)
    public static let invalidPDU = ATTErrorCode(0x04)
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    public static let requestNotSupported = ATTErrorCode(0x06)
    public static let invalidOffset = ATTErrorCode(0x07)
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    public static let prepareQueueFull = ATTErrorCode(0x09)
    public static let attributeNotFound = ATTErrorCode(0x0A)
    public static let attributeNotLong = ATTErrorCode(0x0B)
    public static let encryptionKeySizeTooShort = ATTErrorCode(0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    public static let unlikelyError = ATTErrorCode(0x0E)
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    public static let insufficientResources = ATTErrorCode(0x11)
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    public static let valueNotAllowed = ATTErrorCode(0x13)
    /// Common Profile and Service Error Codes (Core Specification Supplement, Part B, 1.2).
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    public static let outOfRange = ATTErrorCode(0xFF)

    /// 0x80-0x9F: defined by the higher-layer specification (the service).
    @inlinable public var isApplicationError: Bool { rawValue >= 0x80 && rawValue <= 0x9F }
    /// 0xE0-0xFF: Common Profile and Service Error Codes.
    @inlinable public var isCommonProfileError: Bool { rawValue >= 0xE0 }

    /// The specification's name ("Insufficient Encryption"), "Application Error",
    /// or "Reserved" for unassigned values.
    public var name: String {
        switch rawValue {
        case 0x01: return "Invalid Handle"
        case 0x02: return "Read Not Permitted"
        case 0x03: return "Write Not Permitted"
        case 0x04: return "Invalid PDU"
        case 0x05: return "Insufficient Authentication"
        case 0x06: return "Request Not Supported"
        case 0x07: return "Invalid Offset"
        case 0x08: return "Insufficient Authorization"
        case 0x09: return "Prepare Queue Full"
        case 0x0A: return "Attribute Not Found"
        case 0x0B: return "Attribute Not Long"
        case 0x0C: return "Encryption Key Size Too Short"
        case 0x0D: return "Invalid Attribute Value Length"
        case 0x0E: return "Unlikely Error"
        case 0x0F: return "Insufficient Encryption"
        case 0x10: return "Unsupported Group Type"
        case 0x11: return "Insufficient Resources"
        case 0x12: return "Database Out Of Sync"
        case 0x13: return "Value Not Allowed"
        case 0x80...0x9F: return "Application Error"
        case 0xFC: return "Write Request Rejected"
        case 0xFD: return "Client Characteristic Configuration Descriptor Improperly Configured"
        case 0xFE: return "Procedure Already in Progress"
        case 0xFF: return "Out of Range"
        case 0xE0...0xFB: return "Reserved Common Profile Error"
        default: return "Reserved"
        }
    }

    /// "Insufficient Authentication (0x05)".
    public var description: String { "\(name) (\(rawValue.hex))" }
}
