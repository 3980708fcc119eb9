import BLEWire

/// Security Manager PDUs of `ble decode` (Vol 3, Part H, 3.5-3.6): the PDU's name and its
/// fields. Keys exchanged in the clear are shown as they are in the capture.
extension PacketDescriber {
    static func smp(_ payload: [UInt8], fields: inout [(String, JSONValue)]) -> String {
        guard let code = payload.first else { return "SMP len 0" }
        fields.append(("smpCode", .int(Int(code))))
        fields.append(("smp", .string(hexString(payload))))
        guard let pdu = try? SMPPDU(bytes: payload) else {
            return "SMP len \(payload.count) | code 0x\(hex(code, width: 2)): undecodable"
        }
        fields.append(("smpName", .string("\(pdu.code)")))
        var s = "SMP len \(payload.count) | \(pdu.code)"
        func key(_ name: String, _ value: UInt128) {
            fields.append((name, .string(hex(value, width: 32))))
            s += " \(name) \(hex(value, width: 32))"
        }
        switch pdu {
        case .pairingRequest(let p), .pairingResponse(let p):
            s += ": io \(p.ioCapability), oob \(p.oobDataFlag), auth \(p.authReq), max key size \(p.maximumEncryptionKeySize)"
                + ", initiator keys \(p.initiatorKeyDistribution), responder keys \(p.responderKeyDistribution)"
            fields += [("ioCapability", .int(Int(p.ioCapability.rawValue))), ("oobDataFlag", .int(Int(p.oobDataFlag))),
                       ("authReq", .int(Int(p.authReq.rawValue))), ("maxKeySize", .int(Int(p.maximumEncryptionKeySize))),
                       ("initiatorKeyDistribution", .int(Int(p.initiatorKeyDistribution.rawValue))),
                       ("responderKeyDistribution", .int(Int(p.responderKeyDistribution.rawValue)))]
        case .pairingConfirm(let v): key("confirm", v)
        case .pairingRandom(let v): key("random", v)
        case .pairingDHKeyCheck(let v): key("check", v)
        case .encryptionInformation(let v): key("ltk", v)
        case .identityInformation(let v): key("irk", v)
        case .signingInformation(let v): key("csrk", v)
        case .pairingFailed(let reason):
            s += ": \(reason)"
            fields.append(("reason", .int(Int(reason.rawValue))))
        case .pairingPublicKey(let k):
            s += ": x \(hexString(k.x)) y \(hexString(k.y))"
            fields += [("x", .string(hexString(k.x))), ("y", .string(hexString(k.y)))]
        case .pairingKeypressNotification(let type):
            s += ": type \(type.rawValue)"
            fields.append(("notificationType", .int(Int(type.rawValue))))
        case .centralIdentification(let ediv, let rand):
            s += ": ediv 0x\(hex(ediv, width: 4)) rand 0x\(hex(rand, width: 16))"
            fields += [("ediv", .int(Int(ediv))), ("rand", .string(hex(rand, width: 16)))]
        case .identityAddressInformation(let type, let address):
            s += ": \(address) (\(type == 0 ? "public" : "static random"))"
            fields += [("addressType", .int(Int(type))), ("address", .string(address.description))]
        case .securityRequest(let auth):
            s += ": auth \(auth)"
            fields.append(("authReq", .int(Int(auth.rawValue))))
        }
        return s
    }
}
