import BLEWire

/// Signaling commands of `ble decode`: the LE signaling channel (CID 0x0005, one command per
/// C-frame) and the BR/EDR one (CID 0x0001, several commands per C-frame), Core Specification
/// 5.4 Vol 3, Part A, 4. Each command is one object of the line's `signaling` array, with
/// every field it carries.
extension PacketDescriber {
    /// Splits a C-frame into its commands (code, identifier, 2-octet length, data); bytes that
    /// do not make a whole command end the list as a malformed entry.
    static func signalingCommands(_ bytes: [UInt8], single: Bool) -> [Result<L2CAPSignalingCommand, SignalingMalformed>] {
        var out: [Result<L2CAPSignalingCommand, SignalingMalformed>] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { out.append(.failure(SignalingMalformed(bytes: Array(bytes[offset...])))); break }
            let length = Int(bytes[offset + 2]) | Int(bytes[offset + 3]) << 8
            let end = single ? bytes.count : min(bytes.count, offset + 4 + length)
            let slice = Array(bytes[offset..<end])
            if let cmd = try? L2CAPSignalingCommand(bytes: slice) {
                out.append(.success(cmd))
            } else {
                out.append(.failure(SignalingMalformed(bytes: slice)))
                break
            }
            offset = end
        }
        return out
    }

    struct SignalingMalformed: Error { var bytes: [UInt8] }

    /// One command: its text and its JSON fields.
    static func signalingCommand(_ cmd: L2CAPSignalingCommand) -> (String, [(String, JSONValue)]) {
        var f: [(String, JSONValue)] = [("code", .int(Int(cmd.code))), ("identifier", .int(Int(cmd.identifier))), ("name", .string(signalingName(cmd.code)))]
        func add(_ key: String, _ v: Int) { f.append((key, .int(v))) }
        func cid(_ c: UInt16) -> String { "0x\(hex(c, width: 4))" }
        func cids(_ list: [UInt16]) -> String { list.map(cid).joined(separator: ",") }
        let head = "\(signalingName(cmd.code)) (0x\(hex(cmd.code, width: 2))) id \(cmd.identifier)"
        let s: String
        switch cmd.body {
        case .commandReject(let reason, let data):
            add("reason", Int(reason))
            f.append(("data", .string(hexString(data))))
            s = "\(head): reason 0x\(hex(reason, width: 4))"
        case .connectionParameterUpdateRequest(let r):
            add("intervalMin", Int(r.minimumInterval)); add("intervalMax", Int(r.maximumInterval))
            add("latency", Int(r.peripheralLatency)); add("timeout", Int(r.supervisionTimeout))
            s = "\(head): interval \(ms(r.minimumInterval, 1.25))-\(ms(r.maximumInterval, 1.25)) ms latency \(r.peripheralLatency) timeout \(Int(r.supervisionTimeout) * 10) ms"
        case .connectionParameterUpdateResponse(let result):
            add("result", Int(result))
            s = "\(head): \(result == 0 ? "accepted" : "rejected")"
        case .disconnectionRequest(let d, let src), .disconnectionResponse(let d, let src):
            add("dcid", Int(d)); add("scid", Int(src))
            s = "\(head): dcid \(cid(d)) scid \(cid(src))"
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            add("psm", Int(psm)); add("scid", Int(scid)); add("mtu", Int(mtu)); add("mps", Int(mps)); add("credits", Int(credits))
            s = "\(head): psm \(psmName(psm)) scid \(cid(scid)) mtu \(mtu) mps \(mps) credits \(credits)"
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, let credits, let result):
            add("dcid", Int(dcid)); add("mtu", Int(mtu)); add("mps", Int(mps)); add("credits", Int(credits)); add("result", Int(result))
            s = "\(head): dcid \(cid(dcid)) mtu \(mtu) mps \(mps) credits \(credits) result \(CreditBasedConnectionResult(rawValue: result))"
        case .flowControlCreditIndication(let c, let credits):
            add("cid", Int(c)); add("credits", Int(credits))
            s = "\(head): cid \(cid(c)) credits \(credits)"
        case .creditBasedConnectionRequest(let psm, let mtu, let mps, let credits, let scids):
            add("psm", Int(psm)); add("mtu", Int(mtu)); add("mps", Int(mps)); add("credits", Int(credits))
            f.append(("scids", .array(scids.map { .int(Int($0)) })))
            s = "\(head): psm \(psmName(psm)) mtu \(mtu) mps \(mps) credits \(credits) scids \(cids(scids))"
        case .creditBasedConnectionResponse(let mtu, let mps, let credits, let result, let dcids):
            add("mtu", Int(mtu)); add("mps", Int(mps)); add("credits", Int(credits)); add("result", Int(result))
            f.append(("dcids", .array(dcids.map { .int(Int($0)) })))
            s = "\(head): mtu \(mtu) mps \(mps) credits \(credits) result \(CreditBasedConnectionResult(rawValue: result)) dcids \(cids(dcids))"
        case .creditBasedReconfigureRequest(let mtu, let mps, let dcids):
            add("mtu", Int(mtu)); add("mps", Int(mps))
            f.append(("dcids", .array(dcids.map { .int(Int($0)) })))
            s = "\(head): mtu \(mtu) mps \(mps) dcids \(cids(dcids))"
        case .creditBasedReconfigureResponse(let result):
            add("result", Int(result))
            s = "\(head): result 0x\(hex(result, width: 4))"
        case .other(let code, let data):
            if let classic = ClassicSignaling(code: code, data: data) {
                f += classic.fields
                s = "\(head): \(classic.text)"
            } else {
                f.append(("data", .string(hexString(data))))
                s = "\(head): \(hexString(data))"
            }
        }
        return (s, f)
    }

    static func signalingName(_ code: UInt8) -> String {
        switch code {
        case 0x01: return "Command Reject"
        case 0x02: return "Connection Request"
        case 0x03: return "Connection Response"
        case 0x04: return "Configuration Request"
        case 0x05: return "Configuration Response"
        case 0x06: return "Disconnection Request"
        case 0x07: return "Disconnection Response"
        case 0x08: return "Echo Request"
        case 0x09: return "Echo Response"
        case 0x0A: return "Information Request"
        case 0x0B: return "Information Response"
        case 0x12: return "Connection Parameter Update Request"
        case 0x13: return "Connection Parameter Update Response"
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

    /// "0x001F (ATT)": PSMs of the Assigned Numbers document (Protocol Identifiers, L2CAP PSM).
    static func psmName(_ psm: UInt16) -> String {
        let name: String?
        switch psm {
        case 0x0001: name = "SDP"
        case 0x0003: name = "RFCOMM"
        case 0x000F: name = "BNEP"
        case 0x0011: name = "HID Control"
        case 0x0013: name = "HID Interrupt"
        case 0x0017: name = "AVCTP"
        case 0x0019: name = "AVDTP"
        case 0x001B: name = "AVCTP Browsing"
        case 0x001F: name = "ATT"
        case 0x0023: name = "IPSP"
        case 0x0025: name = "OTS"
        case 0x0027: name = "EATT"
        default: name = nil
        }
        return "0x\(hex(psm, width: 4))" + (name.map { " (\($0))" } ?? "")
    }
}

/// The BR/EDR-only signaling commands the channel map needs (Vol 3, Part A, 4.2-4.3):
/// Connection Request (PSM, SCID) and Connection Response (DCID, SCID, Result, Status).
/// Other BR/EDR commands stay raw.
enum ClassicSignaling {
    case connectionRequest(psm: UInt16, sourceCID: UInt16)
    /// Result 0x0000 successful, 0x0001 pending (another response follows), others refused.
    case connectionResponse(destinationCID: UInt16, sourceCID: UInt16, result: UInt16, status: UInt16)

    init?(code: UInt8, data: [UInt8]) {
        func u16(_ i: Int) -> UInt16 { UInt16(data[i]) | UInt16(data[i + 1]) << 8 }
        switch code {
        case 0x02 where data.count == 4: self = .connectionRequest(psm: u16(0), sourceCID: u16(2))
        case 0x03 where data.count == 8: self = .connectionResponse(destinationCID: u16(0), sourceCID: u16(2), result: u16(4), status: u16(6))
        default: return nil
        }
    }

    var fields: [(String, JSONValue)] {
        switch self {
        case .connectionRequest(let psm, let scid): return [("psm", .int(Int(psm))), ("scid", .int(Int(scid)))]
        case .connectionResponse(let d, let s, let r, let st): return [("dcid", .int(Int(d))), ("scid", .int(Int(s))), ("result", .int(Int(r))), ("status", .int(Int(st)))]
        }
    }

    var text: String {
        switch self {
        case .connectionRequest(let psm, let scid):
            return "psm \(PacketDescriber.psmName(psm)) scid 0x\(hex(scid, width: 4))"
        case .connectionResponse(let d, let s, let r, let st):
            let result: String
            switch r {
            case 0x0000: result = "successful"
            case 0x0001: result = "pending"
            case 0x0002: result = "refused, PSM not supported"
            case 0x0003: result = "refused, security block"
            case 0x0004: result = "refused, no resources"
            case 0x0006: result = "refused, invalid source CID"
            case 0x0007: result = "refused, source CID already allocated"
            default: result = "0x\(hex(r, width: 4))"
            }
            return "dcid 0x\(hex(d, width: 4)) scid 0x\(hex(s, width: 4)) result \(result) status 0x\(hex(st, width: 4))"
        }
    }
}
