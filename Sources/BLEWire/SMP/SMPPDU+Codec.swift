extension SMPPDU {
    /// Decodes one PDU; any byte sequence gives a PDU or an `SMPDecodeError`.
    public init(bytes: some Collection<UInt8>) throws(SMPDecodeError) {
        guard let first = bytes.first else { throw .empty }
        guard let code = SMPCode(rawValue: first) else { throw .unknownCode(first) }
        let p = Array(bytes.dropFirst())
        guard p.count == code.parameterLength else { throw .wrongLength(code: code, expected: code.parameterLength, actual: p.count) }
        switch code {
        case .pairingRequest: self = .pairingRequest(PairingParameters(p))
        case .pairingResponse: self = .pairingResponse(PairingParameters(p))
        case .pairingConfirm: self = .pairingConfirm(UInt128(littleEndianBytes: p))
        case .pairingRandom: self = .pairingRandom(UInt128(littleEndianBytes: p))
        case .pairingFailed: self = .pairingFailed(PairingFailedReason(rawValue: p[0]))
        case .pairingPublicKey: self = .pairingPublicKey(P256PublicKey(x: p[0..<32].reversed(), y: p[32..<64].reversed())!)
        case .pairingDHKeyCheck: self = .pairingDHKeyCheck(UInt128(littleEndianBytes: p))
        case .pairingKeypressNotification: self = .pairingKeypressNotification(KeypressNotificationType(rawValue: p[0]))
        case .encryptionInformation: self = .encryptionInformation(longTermKey: UInt128(littleEndianBytes: p))
        case .centralIdentification:
            let rand = p[2..<10].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * $1.offset) }
            self = .centralIdentification(ediv: UInt16(p[0]) | UInt16(p[1]) << 8, rand: rand)
        case .identityInformation: self = .identityInformation(identityResolvingKey: UInt128(littleEndianBytes: p))
        case .identityAddressInformation:
            let raw = p[1..<7].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * $1.offset) }
            self = .identityAddressInformation(addressType: p[0], address: BluetoothAddress(rawValue: raw))
        case .signingInformation: self = .signingInformation(signatureKey: UInt128(littleEndianBytes: p))
        case .securityRequest: self = .securityRequest(AuthenticationRequirements(rawValue: p[0]))
        }
    }

    /// The PDU as sent on channel 0x0006.
    public var bytes: [UInt8] {
        var out: [UInt8] = [code.rawValue]
        switch self {
        case .pairingRequest(let p), .pairingResponse(let p): out += p.bytes
        case .pairingConfirm(let v), .pairingRandom(let v), .pairingDHKeyCheck(let v),
             .encryptionInformation(let v), .identityInformation(let v), .signingInformation(let v):
            out += v.littleEndianBytes
        case .pairingFailed(let reason): out.append(reason.rawValue)
        case .pairingPublicKey(let key): out += key.x.reversed() + key.y.reversed()
        case .pairingKeypressNotification(let type): out.append(type.rawValue)
        case .centralIdentification(let ediv, let rand):
            out += [UInt8(truncatingIfNeeded: ediv), UInt8(truncatingIfNeeded: ediv >> 8)]
            out += (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * UInt64($0))) }
        case .identityAddressInformation(let type, let address): out += [type] + address.littleEndianBytes
        case .securityRequest(let authReq): out.append(authReq.rawValue)
        }
        return out
    }
}

extension PairingParameters {
    /// From the six parameter octets (the caller checked the length).
    init(_ p: [UInt8]) {
        self.init(ioCapability: IOCapability(rawValue: p[0]), oobDataFlag: p[1], authReq: AuthenticationRequirements(rawValue: p[2]),
                  maximumEncryptionKeySize: p[3], initiatorKeyDistribution: KeyDistribution(rawValue: p[4]),
                  responderKeyDistribution: KeyDistribution(rawValue: p[5]))
    }

    /// The six parameter octets.
    public var bytes: [UInt8] {
        [ioCapability.rawValue, oobDataFlag, authReq.rawValue, maximumEncryptionKeySize, initiatorKeyDistribution.rawValue, responderKeyDistribution.rawValue]
    }
}
