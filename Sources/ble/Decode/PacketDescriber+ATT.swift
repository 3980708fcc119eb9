import BLEWire

/// ATT PDUs (Vol 3, Part F, 3.4) of `ble decode`.
/// Every decoded ATT field also goes into the JSON line: handles and offsets as numbers,
/// values as lowercase hex strings (`attValue`), lists as arrays.
extension PacketDescriber {
    static func att(_ bytes: [UInt8], fields: inout [(String, JSONValue)]) -> String {
        guard let pdu = try? ATTPDU(bytes: bytes) else {
            let op = bytes.first.map { ATTOpcode($0).description } ?? "empty PDU"
            if let code = bytes.first { fields.append(("attOpcode", .int(Int(code)))) }
            fields.append(("attMalformed", .string(hexString(bytes))))
            return "\(op): malformed (\(hexString(bytes)))"
        }
        fields.append(("attOpcode", .int(Int(pdu.opcode.rawValue))))
        if let h = pdu.handle { fields.append(("attHandle", .int(Int(h)))) }
        var s = pdu.opcode.description
        func h4(_ h: UInt16) -> String { "0x\(hex(h, width: 4))" }
        func uuid(_ u: BluetoothUUID) -> String { AssignedNumbers.name(for: u).map { "\(u) (\($0))" } ?? "\(u)" }
        func add(_ key: String, _ value: JSONValue) { fields.append((key, value)) }
        func value(_ v: [UInt8]) { add("attValue", .string(hexString(v))) }
        func range(_ r: ATTHandleRange) {
            add("attStartHandle", .int(Int(r.start)))
            add("attEndHandle", .int(Int(r.end)))
        }
        switch pdu {
        case .errorResponse(let req, let h, let code):
            s += ": \(req.name) handle \(h4(h)) error \(code)"
            add("attRequestOpcode", .int(Int(req.rawValue)))
            add("attError", .int(Int(code.rawValue)))
        case .exchangeMTURequest(let mtu):
            s += ": client rx MTU \(mtu)"
            add("attMTU", .int(Int(mtu)))
        case .exchangeMTUResponse(let mtu):
            s += ": server rx MTU \(mtu)"
            add("attMTU", .int(Int(mtu)))
        case .findInformationRequest(let r):
            s += ": \(r)"
            range(r)
        case .findInformationResponse(let format, let entries):
            s += ": " + entries.map { "\(h4($0.handle)) \(uuid($0.uuid))" }.joined(separator: ", ")
            add("attFormat", .int(Int(format.rawValue)))
            add("attInformation", .array(entries.map { .object([("handle", .int(Int($0.handle))), ("uuid", .string("\($0.uuid)"))]) }))
        case .findByTypeValueRequest(let r, let t, let v):
            s += ": \(r) type \(uuid(t)) value \(hexString(v))"
            range(r)
            add("attType", .string("\(t)"))
            value(v)
        case .findByTypeValueResponse(let ranges):
            s += ": " + ranges.map(\.description).joined(separator: ", ")
            add("attHandlesInformation", .array(ranges.map { .object([("foundHandle", .int(Int($0.start))), ("groupEndHandle", .int(Int($0.end)))]) }))
        case .readByTypeRequest(let r, let t), .readByGroupTypeRequest(let r, let t):
            s += ": \(r) type \(uuid(t))"
            range(r)
            add("attType", .string("\(t)"))
        case .readByTypeResponse(let list):
            s += ": " + list.map { "\(h4($0.handle)) \(hexString($0.value))" }.joined(separator: ", ")
            add("attData", .array(list.map { .object([("handle", .int(Int($0.handle))), ("value", .string(hexString($0.value)))]) }))
        case .readByGroupTypeResponse(let list):
            s += ": " + list.map { g in
                let u = BluetoothUUID(littleEndian: g.value).map(uuid) ?? hexString(g.value)
                return "\(h4(g.handle))-\(h4(g.endGroupHandle)) \(u)"
            }.joined(separator: ", ")
            // The value of a service declaration is its UUID (Vol 3, Part G, 3.1): decoded with its name.
            add("attData", .array(list.map { g in
                let u = BluetoothUUID(littleEndian: g.value)
                return .object([("handle", .int(Int(g.handle))), ("endGroupHandle", .int(Int(g.endGroupHandle))), ("value", .string(hexString(g.value))),
                                ("uuid", .optional(u.map { "\($0)" })), ("name", .optional(u.flatMap(AssignedNumbers.name(for:))))])
            }))
        case .readRequest(let h): s += ": handle \(h4(h))"
        case .readBlobRequest(let h, let o):
            s += ": handle \(h4(h)) offset \(o)"
            add("attOffset", .int(Int(o)))
        case .readResponse(let v), .readBlobResponse(let v), .readMultipleResponse(let v):
            s += ": \(hexString(v))"
            value(v)
        case .readMultipleRequest(let hs), .readMultipleVariableRequest(let hs):
            s += ": " + hs.map(h4).joined(separator: ", ")
            add("attHandles", .array(hs.map { .int(Int($0)) }))
        case .readMultipleVariableResponse(let list):
            add("attValues", .array(list.map { .object([("length", .int(Int($0.length))), ("value", .string(hexString($0.value)))]) }))
        case .writeRequest(let h, let v), .writeCommand(let h, let v),
             .handleValueNotification(let h, let v), .handleValueIndication(let h, let v):
            s += ": handle \(h4(h)) value \(hexString(v))"
            value(v)
        case .signedWriteCommand(let h, let v, let signature):
            s += ": handle \(h4(h)) value \(hexString(v))"
            value(v)
            add("attSignCounter", .int(Int(signature.signCounter)))
            add("attSignatureMAC", .string("0x\(hex(signature.mac, width: 16))"))
        case .prepareWriteRequest(let h, let o, let v), .prepareWriteResponse(let h, let o, let v):
            s += ": handle \(h4(h)) offset \(o) value \(hexString(v))"
            add("attOffset", .int(Int(o)))
            value(v)
        case .executeWriteRequest(let flags):
            add("attFlags", .int(Int(flags.rawValue)))
        case .multipleHandleValueNotification(let list):
            s += ": " + list.map { "\(h4($0.handle)) \(hexString($0.value))" }.joined(separator: ", ")
            add("attNotifications", .array(list.map { .object([("handle", .int(Int($0.handle))), ("value", .string(hexString($0.value)))]) }))
        case .unknown(_, let p):
            s += ": \(hexString(p))"
            add("attParameters", .string(hexString(p)))
        default: break
        }
        return s
    }
}
