import ATT
import BLECore

/// ATT PDUs (Vol 3, Part F, 3.4) and LE signaling commands (Vol 3, Part A, 4) of `ble decode`.
extension PacketDescriber {
    static func att(_ bytes: [UInt8], fields: inout [(String, JSON)]) -> String {
        guard let pdu = try? ATTPDU(bytes: bytes) else {
            let op = bytes.first.map { ATTOpcode($0).description } ?? "empty PDU"
            return "\(op): malformed (\(hexString(bytes)))"
        }
        fields.append(("attOpcode", .int(Int(pdu.opcode.rawValue))))
        if let h = pdu.handle { fields.append(("attHandle", .int(Int(h)))) }
        var s = pdu.opcode.description
        func h4(_ h: UInt16) -> String { "0x\(hex(h, width: 4))" }
        func uuid(_ u: BluetoothUUID) -> String { AssignedNumbers.name(for: u).map { "\(u) (\($0))" } ?? "\(u)" }
        switch pdu {
        case .errorResponse(let req, let h, let code):
            s += ": \(req.name) handle \(h4(h)) error \(code)"
        case .exchangeMTURequest(let mtu): s += ": client rx MTU \(mtu)"
        case .exchangeMTUResponse(let mtu): s += ": server rx MTU \(mtu)"
        case .findInformationRequest(let r): s += ": \(r)"
        case .findInformationResponse(_, let entries):
            s += ": " + entries.map { "\(h4($0.handle)) \(uuid($0.uuid))" }.joined(separator: ", ")
        case .findByTypeValueRequest(let r, let t, let v): s += ": \(r) type \(uuid(t)) value \(hexString(v))"
        case .findByTypeValueResponse(let ranges): s += ": " + ranges.map(\.description).joined(separator: ", ")
        case .readByTypeRequest(let r, let t), .readByGroupTypeRequest(let r, let t): s += ": \(r) type \(uuid(t))"
        case .readByTypeResponse(let list):
            s += ": " + list.map { "\(h4($0.handle)) \(hexString($0.value))" }.joined(separator: ", ")
        case .readByGroupTypeResponse(let list):
            s += ": " + list.map { g in
                let u = BluetoothUUID(littleEndian: g.value).map(uuid) ?? hexString(g.value)
                return "\(h4(g.handle))-\(h4(g.endGroupHandle)) \(u)"
            }.joined(separator: ", ")
        case .readRequest(let h): s += ": handle \(h4(h))"
        case .readBlobRequest(let h, let o): s += ": handle \(h4(h)) offset \(o)"
        case .readResponse(let v), .readBlobResponse(let v), .readMultipleResponse(let v):
            s += ": \(hexString(v))"
        case .readMultipleRequest(let hs), .readMultipleVariableRequest(let hs):
            s += ": " + hs.map(h4).joined(separator: ", ")
        case .writeRequest(let h, let v), .writeCommand(let h, let v), .signedWriteCommand(let h, let v, _),
             .handleValueNotification(let h, let v), .handleValueIndication(let h, let v):
            s += ": handle \(h4(h)) value \(hexString(v))"
        case .prepareWriteRequest(let h, let o, let v), .prepareWriteResponse(let h, let o, let v):
            s += ": handle \(h4(h)) offset \(o) value \(hexString(v))"
        case .multipleHandleValueNotification(let list):
            s += ": " + list.map { "\(h4($0.handle)) \(hexString($0.value))" }.joined(separator: ", ")
        case .unknown(_, let p): s += ": \(hexString(p))"
        default: break
        }
        return s
    }

    static func signaling(_ bytes: [UInt8]) -> String {
        guard let cmd = try? L2CAPSignalingCommand(bytes: bytes) else {
            return "malformed signaling command (\(hexString(bytes)))"
        }
        let id = "id \(cmd.identifier)"
        switch cmd.body {
        case .commandReject(let reason, _): return "Command Reject (0x01) \(id): reason 0x\(hex(reason, width: 4))"
        case .connectionParameterUpdateRequest(let r):
            return "Connection Parameter Update Request (0x12) \(id): interval \(ms(r.minimumInterval, 1.25))-\(ms(r.maximumInterval, 1.25)) ms latency \(r.peripheralLatency) timeout \(Int(r.supervisionTimeout) * 10) ms"
        case .connectionParameterUpdateResponse(let result):
            return "Connection Parameter Update Response (0x13) \(id): \(result == 0 ? "accepted" : "rejected")"
        case .disconnectionRequest(let d, let src): return "Disconnection Request (0x06) \(id): dcid 0x\(hex(d, width: 4)) scid 0x\(hex(src, width: 4))"
        case .disconnectionResponse(let d, let src): return "Disconnection Response (0x07) \(id): dcid 0x\(hex(d, width: 4)) scid 0x\(hex(src, width: 4))"
        case .other(let code, let data): return "\(signalingName(code)) (0x\(hex(code, width: 2))) \(id): \(hexString(data))"
        default: return creditBasedSignaling(cmd)
        }
    }

    static func signalingName(_ code: UInt8) -> String {
        switch code {
        case 0x14: return "LE Credit Based Connection Request"
        case 0x15: return "LE Credit Based Connection Response"
        case 0x16: return "Flow Control Credit Indication"
        case 0x17: return "Credit Based Connection Request"
        case 0x18: return "Credit Based Connection Response"
        case 0x19: return "Credit Based Reconfigure Request"
        case 0x1A: return "Credit Based Reconfigure Response"
        default: return "Signaling command"
        }
    }
}
