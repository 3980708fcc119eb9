import ATT
import BLECore

/// Turns the packets of a capture into one line each, decoded by the stack's own codecs:
/// HCI commands and events with names and key fields, ACL with handle and packet boundary,
/// L2CAP channel, ATT PDUs with handles and values, LE signaling. L2CAP PDUs split over several
/// ACL fragments are reassembled per connection handle and direction (the line of the last
/// fragment carries the decoded PDU).
struct PacketDescriber {
    /// One decoded packet.
    struct Line: Sendable {
        var index: Int
        /// Seconds since the first packet.
        var time: Double
        var direction: PacketDirection
        /// "CMD", "EVT", "ACL", "SCO", "ISO".
        var kind: String
        var summary: String
        var fields: [(String, JSON)]

        var text: String {
            let arrow = direction == .sent ? "<" : ">"
            let t = String(format6(time))
            return "\(pad(String(index), 5)) \(pad(t, 12)) \(arrow) \(kind) \(summary)"
        }

        var json: JSON {
            .object([("index", .int(index)), ("time", .double(time)),
                     ("direction", .string(direction == .sent ? "sent" : "received")), ("type", .string(kind)),
                     ("summary", .string(summary))] + fields)
        }
    }

    private struct LinkKey: Hashable { var handle: UInt16; var sent: Bool }
    private var reassemblers: [LinkKey: ACLReassembler] = [:]
    private var firstTimestamp: Int64?
    /// Describes the record numbered `index` (from 1) in the capture.
    mutating func describe(_ record: BTSnoopRecord, index: Int) -> Line {
        let first = firstTimestamp ?? record.timestamp
        firstTimestamp = first
        let time = Double(record.timestamp - first) / 1_000_000
        var line = Line(index: index, time: time, direction: record.direction, kind: "", summary: "", fields: [])
        switch record.packet {
        case .command(let c):
            line.kind = "CMD"
            (line.summary, line.fields) = Self.command(c)
        case .event(let e):
            line.kind = "EVT"
            (line.summary, line.fields) = Self.event(e)
        case .acl(let a):
            line.kind = "ACL"
            (line.summary, line.fields) = acl(a, sent: record.direction == .sent)
        case .sco(let b):
            line.kind = "SCO"
            line.summary = "\(b.count) bytes"
        case .iso(let b):
            line.kind = "ISO"
            line.summary = "\(b.count) bytes"
        }
        return line
    }

    // MARK: Commands

    static func command(_ c: HCICommandPacket) -> (String, [(String, JSON)]) {
        var fields: [(String, JSON)] = [("opcode", .int(Int(c.opcode.rawValue))), ("plen", .int(c.parameters.count))]
        var s = "\(opcodeName(c.opcode)) plen \(c.parameters.count)"
        guard let decoded = try? HCICommandDecoded(c) else { return (s, fields) }
        switch decoded {
        case .disconnect(let d):
            s += ": handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields.append(("handle", .int(Int(d.handle))))
        case .leSetScanEnable(let p):
            s += ": \(p.enable ? "enable" : "disable"), filter duplicates \(p.filterDuplicates ? "on" : "off")"
        case .leSetScanParameters(let p):
            s += ": \(p.scanType == 1 ? "active" : "passive"), interval \(ms(p.scanInterval, 0.625)) ms, window \(ms(p.scanWindow, 0.625)) ms"
        case .leCreateConnection(let p):
            let peer = LEAddressType(rawValue: p.peerAddressType).map { "\(LEAddress(p.peerAddress, type: $0))" } ?? "\(p.peerAddress) (type \(p.peerAddressType))"
            s += ": peer \(peer), interval \(ms(p.connection.intervalMin, 1.25))-\(ms(p.connection.intervalMax, 1.25)) ms"
            fields.append(("peer", .string(p.peerAddress.description)))
        case .leConnectionUpdate(let p):
            s += ": handle 0x\(hex(p.handle, width: 4)), interval \(ms(p.parameters.intervalMin, 1.25))-\(ms(p.parameters.intervalMax, 1.25)) ms, latency \(p.parameters.maxLatency), timeout \(Int(p.parameters.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(p.handle))))
        case .readRSSI(let h), .leReadRemoteFeatures(let h), .readRemoteVersionInformation(let h), .leReadPHY(let h):
            s += ": handle 0x\(hex(h, width: 4))"
            fields.append(("handle", .int(Int(h))))
        case .leSetRandomAddress(let a):
            s += ": \(a)"
        case .leSetAdvertisingEnable(let on):
            s += ": \(on ? "enable" : "disable")"
        default:
            break
        }
        return (s, fields)
    }

    /// Opcode 0x0000 is the No Operation opcode (Vol 4, Part E, 7.7.14): a controller sends
    /// it to give the host command credits.
    static func opcodeName(_ o: HCIOpcode) -> String {
        o.rawValue == 0 ? "HCI_NOP (0x0000)" : "\(o)"
    }

    // MARK: Events

    static func event(_ e: HCIEventPacket) -> (String, [(String, JSON)]) {
        var fields: [(String, JSON)] = [("event", .int(Int(e.code))), ("plen", .int(e.parameters.count))]
        let name = HCIEventNames.event(e.code)
        guard let decoded = try? HCIEvent(e) else {
            var s = "\(name) (0x\(hex(e.code, width: 2))) plen \(e.parameters.count)"
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first {
                s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2))) plen \(e.parameters.count): undecodable"
                fields.append(("subevent", .int(Int(sub))))
            } else {
                s += ": undecodable"
            }
            return (s, fields)
        }
        var s: String
        switch decoded {
        case .commandComplete(let c):
            s = "Command Complete: \(opcodeName(c.opcode))"
            if let st = c.status { s += " status \(st)" }
            s += " ncmd \(c.numHCICommandPackets)"
            fields.append(("opcode", .int(Int(c.opcode.rawValue))))
            if let st = c.status { fields.append(("status", .int(Int(st.rawValue)))) }
        case .commandStatus(let c):
            s = "Command Status: \(opcodeName(c.opcode)) status \(c.status) ncmd \(c.numHCICommandPackets)"
            fields.append(("opcode", .int(Int(c.opcode.rawValue))))
            fields.append(("status", .int(Int(c.status.rawValue))))
        case .disconnectionComplete(let d):
            s = "Disconnection Complete: status \(d.status) handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields.append(("handle", .int(Int(d.handle))))
        case .numberOfCompletedPackets(let list):
            s = "Number Of Completed Packets: " + list.map { "handle 0x\(hex($0.handle, width: 4)) count \($0.count)" }.joined(separator: ", ")
        case .encryptionChange(let c):
            s = "Encryption Change: status \(c.status) handle 0x\(hex(c.handle, width: 4)) encryption \(c.encryptionEnabled)"
        case .readRemoteVersionInformationComplete(let r):
            s = "Read Remote Version Information Complete: status \(r.status) handle 0x\(hex(r.handle, width: 4)) version \(r.version.name) company \(AssignedNumbers.companyName(r.companyIdentifier) ?? "0x\(hex(r.companyIdentifier, width: 4))") subversion 0x\(hex(r.subversion, width: 4))"
            fields.append(("handle", .int(Int(r.handle))))
        case .hardwareError(let code):
            s = "Hardware Error: code 0x\(hex(code, width: 2))"
        case .leConnectionComplete(let c):
            s = "LE Connection Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leEnhancedConnectionComplete(let c):
            s = "LE Enhanced Connection Complete\(c.isV2 ? " v2" : ""): status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leConnectionUpdateComplete(let c):
            s = "LE Connection Update Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leAdvertisingReport(let reports):
            s = "LE Advertising Report: " + reports.map { r in
                let type = LEAddressType(rawValue: r.addressType).map { "\(LEAddress(r.address, type: $0))" } ?? "\(r.address)"
                var t = "\(type) rssi \(r.rssi)"
                if let name = AdvertisingData(bytes: r.data).localName { t += " name \"\(name)\"" }
                return t
            }.joined(separator: "; ")
        case .leDataLengthChange(let d):
            s = "LE Data Length Change: handle 0x\(hex(d.handle, width: 4)) tx \(d.maxTxOctets) rx \(d.maxRxOctets) octets"
        case .leReadRemoteFeaturesComplete(let f):
            s = "LE Read Remote Features Complete: status \(f.status) handle 0x\(hex(f.handle, width: 4))"
        case .leChannelSelectionAlgorithm(let h, let a):
            s = "LE Channel Selection Algorithm: handle 0x\(hex(h, width: 4)) algorithm #\(Int(a) + 1)"
        case .leUnknown(let sub, _):
            s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2)))"
            fields.append(("subevent", .int(Int(sub))))
        case .unknown(let code, _):
            s = "\(HCIEventNames.event(code)) (0x\(hex(code, width: 2)))"
        default:
            s = name
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first { s = HCIEventNames.leSubevent(sub) }
        }
        return (s + " plen \(e.parameters.count)", fields)
    }

    // MARK: ACL, L2CAP, ATT, signaling

    mutating func acl(_ a: ACLDataPacket, sent: Bool) -> (String, [(String, JSON)]) {
        let pb: String
        switch a.boundary {
        case .firstNonFlushable: pb = "start"
        case .firstFlushable: pb = "start (flushable)"
        case .continuing: pb = "continuation"
        case .complete: pb = "complete"
        }
        var s = "handle 0x\(hex(a.handle, width: 4)) PB \(pb) len \(a.data.count)"
        var fields: [(String, JSON)] = [("handle", .int(Int(a.handle))), ("boundary", .string(pb)), ("length", .int(a.data.count))]
        let key = LinkKey(handle: a.handle, sent: sent)
        var r = reassemblers[key] ?? ACLReassembler()
        let outcome = r.push(a)
        reassemblers[key] = r
        switch outcome {
        case .incomplete:
            s += " | L2CAP fragment, PDU continues"
        case .dropped(let why):
            s += " | L2CAP dropped: \(why)"
        case .complete(let cid, let payload):
            fields.append(("cid", .int(Int(cid))))
            s += " | L2CAP CID 0x\(hex(cid, width: 4))"
            switch cid {
            case L2CAPChannelID.att:
                s += " ATT len \(payload.count) | " + Self.att(payload, fields: &fields)
            case L2CAPChannelID.leSignaling:
                s += " LE signaling len \(payload.count) | " + Self.signaling(payload)
            case L2CAPChannelID.securityManager:
                s += " SMP len \(payload.count) | code 0x\(payload.first.map { hex($0, width: 2) } ?? "--")"
            default:
                s += " len \(payload.count)"
            }
        }
        return (s, fields)
    }

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

/// "7.5" for 6 units of 1.25 ms.
func ms(_ units: UInt16, _ unit: Double) -> String {
    let v = Double(units) * unit
    return v == v.rounded() ? String(Int(v)) : String(v)
}

func format6(_ t: Double) -> String {
    let micros = Int((t * 1_000_000).rounded())
    let frac = String(micros % 1_000_000)
    return "\(micros / 1_000_000).\(String(repeating: "0", count: 6 - frac.count))\(frac)"
}

func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
}
