import BLECore
import BLEWire

extension ATTErrorCode {
    /// The refusal for lack of security this code is: Insufficient Authentication,
    /// Insufficient Encryption or Encryption Key Size Too Short (pairing or encrypting may
    /// help; `SecurityLevel.toAsk(after:keySize:)` says how); nil for the others.
    public var securityRefusal: SecurityRefusal? {
        switch self {
        case .insufficientAuthentication: return .insufficientAuthentication
        case .insufficientEncryption: return .insufficientEncryption
        case .encryptionKeySizeTooShort: return .insufficientEncryptionKeySize
        default: return nil
        }
    }

    /// Whether the peer refused for lack of security (`securityRefusal` is not nil).
    public var needsSecurity: Bool { securityRefusal != nil }

    /// What a client can do about the error, when there is something; nil otherwise.
    public var hint: String? {
        switch self {
        case _ where needsSecurity:
            return "pair or encrypt the link, then retry"
        case .insufficientAuthorization: return "the peer must authorize this client first"
        case .invalidAttributeValueLength: return "check the value length the characteristic expects"
        case .attributeNotLong: return "read the value with a plain Read Request"
        case .databaseOutOfSync: return "rediscover the peer's attributes, then retry"
        case .cccdImproperlyConfigured: return "enable notifications or indications first"
        case .prepareQueueFull: return "execute or cancel the queued writes, then retry with fewer"
        default: return nil
        }
    }
}
