/// The parameters of a Pairing Request or Pairing Response (Vol 3, Part H, 3.5.1 and 3.5.2).
public struct PairingParameters: Hashable, Sendable {
    public var ioCapability: IOCapability
    /// OOB data flag: 0x01 when OOB authentication data from the remote device is present.
    public var oobDataFlag: UInt8
    public var authReq: AuthenticationRequirements
    /// 7 to 16 octets (values outside are refused by pairing, not by the decoder).
    public var maximumEncryptionKeySize: UInt8
    public var initiatorKeyDistribution: KeyDistribution
    public var responderKeyDistribution: KeyDistribution

    public init(ioCapability: IOCapability, oobDataFlag: UInt8 = 0, authReq: AuthenticationRequirements, maximumEncryptionKeySize: UInt8 = 16,
                initiatorKeyDistribution: KeyDistribution, responderKeyDistribution: KeyDistribution) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authReq = authReq
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }
}

/// The SMP command codes (Vol 3, Part H, 3.3, Table 3.3).
public enum SMPCode: UInt8, Sendable, CaseIterable {
    case pairingRequest = 0x01
    case pairingResponse = 0x02
    case pairingConfirm = 0x03
    case pairingRandom = 0x04
    case pairingFailed = 0x05
    case encryptionInformation = 0x06
    case centralIdentification = 0x07
    case identityInformation = 0x08
    case identityAddressInformation = 0x09
    case signingInformation = 0x0A
    case securityRequest = 0x0B
    case pairingPublicKey = 0x0C
    case pairingDHKeyCheck = 0x0D
    case pairingKeypressNotification = 0x0E

    /// Octets after the code (every SMP PDU has a fixed length).
    package var parameterLength: Int {
        switch self {
        case .pairingRequest, .pairingResponse: return 6
        case .pairingConfirm, .pairingRandom, .encryptionInformation, .identityInformation, .signingInformation, .pairingDHKeyCheck: return 16
        case .pairingFailed, .securityRequest, .pairingKeypressNotification: return 1
        case .centralIdentification: return 10
        case .identityAddressInformation: return 7
        case .pairingPublicKey: return 64
        }
    }
}

/// One Security Manager Protocol PDU on the LE fixed channel 0x0006 (Vol 3, Part H, 3.5-3.6).
/// Multi-octet fields are least significant octet first on the air; 128-bit values are
/// `UInt128`s and the public key coordinates are held most significant octet first.
///
///     let pdu = try SMPPDU(bytes: [0x05, 0x01])   // .pairingFailed(.passkeyEntryFailed)
public enum SMPPDU: Hashable, Sendable {
    /// 3.5.1
    case pairingRequest(PairingParameters)
    /// 3.5.2
    case pairingResponse(PairingParameters)
    /// 3.5.3: Mconfirm / Sconfirm (legacy) or Ca / Cb (Secure Connections).
    case pairingConfirm(UInt128)
    /// 3.5.4: Mrand / Srand or Na / Nb.
    case pairingRandom(UInt128)
    /// 3.5.5
    case pairingFailed(PairingFailedReason)
    /// 3.5.6
    case pairingPublicKey(P256PublicKey)
    /// 3.5.7: Ea / Eb.
    case pairingDHKeyCheck(UInt128)
    /// 3.5.8
    case pairingKeypressNotification(KeypressNotificationType)
    /// 3.6.2: the LTK.
    case encryptionInformation(longTermKey: UInt128)
    /// 3.6.3: EDIV and Rand.
    case centralIdentification(ediv: UInt16, rand: UInt64)
    /// 3.6.4: the IRK.
    case identityInformation(identityResolvingKey: UInt128)
    /// 3.6.5: AddrType (0x00 public, 0x01 static random) and BD_ADDR.
    case identityAddressInformation(addressType: UInt8, address: BluetoothAddress)
    /// 3.6.6: the CSRK.
    case signingInformation(signatureKey: UInt128)
    /// 3.6.7
    case securityRequest(AuthenticationRequirements)

    public var code: SMPCode {
        switch self {
        case .pairingRequest: return .pairingRequest
        case .pairingResponse: return .pairingResponse
        case .pairingConfirm: return .pairingConfirm
        case .pairingRandom: return .pairingRandom
        case .pairingFailed: return .pairingFailed
        case .pairingPublicKey: return .pairingPublicKey
        case .pairingDHKeyCheck: return .pairingDHKeyCheck
        case .pairingKeypressNotification: return .pairingKeypressNotification
        case .encryptionInformation: return .encryptionInformation
        case .centralIdentification: return .centralIdentification
        case .identityInformation: return .identityInformation
        case .identityAddressInformation: return .identityAddressInformation
        case .signingInformation: return .signingInformation
        case .securityRequest: return .securityRequest
        }
    }
}

/// Why bytes on channel 0x0006 are not an SMP PDU.
public enum SMPDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    case empty
    /// The code is not in Vol 3, Part H, Table 3.3 (answer Command Not Supported).
    case unknownCode(UInt8)
    /// The PDU is not the fixed length of its code (answer Invalid Parameters).
    case wrongLength(code: SMPCode, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .empty: return "empty SMP PDU"
        case .unknownCode(let c): return "unknown SMP code 0x\(String(c, radix: 16)) (Vol 3, Part H, 3.3)"
        case .wrongLength(let code, let expected, let actual):
            return "SMP \(code) PDU has \(actual) parameter octets, expected \(expected) (Vol 3, Part H, 3.5-3.6)"
        }
    }
}
