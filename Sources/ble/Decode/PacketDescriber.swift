import BLEWire

/// Turns the packets of a capture into one line each, decoded by the stack's own codecs:
/// HCI commands and events with names and key fields, ACL with handle and packet boundary,
/// L2CAP channel, ATT PDUs with handles and values, LE signaling. L2CAP PDUs split over several
/// ACL fragments are reassembled per connection handle and direction (the line of the last
/// fragment carries the decoded PDU).
struct PacketDescriber {
    /// One decoded packet.
    struct Line: Sendable {
        var index: Int
        /// Microseconds since the first packet: negative when a capture's clock stepped
        /// back, up to 2^64 - 1 when timestamps sit at the two ends of the 64-bit range.
        var micros: Int128
        /// Seconds since the first packet.
        var time: Double { Double(micros) / 1_000_000 }
        var direction: PacketDirection
        /// "CMD", "EVT", "ACL", "SCO", "ISO".
        var kind: String
        /// Exact text (names as advertised); `text` escapes it for a terminal.
        var summary: String
        var fields: [(String, JSONValue)]

        var text: String {
            let arrow = direction == .sent ? "<" : ">"
            let t = formatSeconds(micros: micros)
            return "\(pad(String(index), 5)) \(pad(t, 12)) \(arrow) \(kind) \(TerminalText.escape(summary))"
        }

        var json: JSONValue {
            .object([("index", .int(index)), ("time", .double(time)),
                     ("direction", .string(direction == .sent ? "sent" : "received")), ("type", .string(kind)),
                     ("summary", .string(summary))] + fields)
        }
    }

    private struct LinkKey: Hashable { var handle: UInt16; var sent: Bool }
    private var reassemblers: [LinkKey: ACLReassembler] = [:]
    /// The dynamic channels opened so far, and what they carry.
    var channelMap = ChannelMap()
    private var firstTimestamp: Int64?

    /// `firstTimestamp`: the time origin (default: the first record described).
    init(firstTimestamp: Int64? = nil) { self.firstTimestamp = firstTimestamp }
    /// Describes the record numbered `index` (from 1) in the capture.
    mutating func describe(_ record: BTSnoopRecord, index: Int) -> Line {
        let first = firstTimestamp ?? record.timestamp
        firstTimestamp = first
        let micros = Int128(record.timestamp) - Int128(first)
        var line = Line(index: index, micros: micros, direction: record.direction, kind: "", summary: "", fields: [])
        switch record.packet {
        case .command(let c):
            line.kind = "CMD"
            (line.summary, line.fields) = Self.command(c)
        case .event(let e):
            line.kind = "EVT"
            (line.summary, line.fields) = Self.event(e)
            // Disconnection Complete, status success (Vol 4, Part E, 7.7.5): the handle is free.
            if e.code == 0x05, e.parameters.count >= 3, e.parameters[0] == 0 {
                let handle = (UInt16(e.parameters[1]) | UInt16(e.parameters[2]) << 8) & 0x0FFF
                channelMap.linkEnded(handle: handle)
                reassemblers[LinkKey(handle: handle, sent: true)] = nil
                reassemblers[LinkKey(handle: handle, sent: false)] = nil
            }
        case .acl(let a):
            line.kind = "ACL"
            (line.summary, line.fields) = acl(a, sent: record.direction == .sent)
        case .sco(let b):
            line.kind = "SCO"
            line.summary = "\(b.count) bytes"
            line.fields = [("payload", .string(hexString(b)))]
        case .iso(let b):
            line.kind = "ISO"
            line.summary = "\(b.count) bytes"
            line.fields = [("payload", .string(hexString(b)))]
        }
        return line
    }

    // MARK: ACL, L2CAP, ATT, signaling

    mutating func acl(_ a: ACLDataPacket, sent: Bool) -> (String, [(String, JSONValue)]) {
        let pb: String
        switch a.boundary {
        case .firstNonFlushable: pb = "start"
        case .firstFlushable: pb = "start (flushable)"
        case .continuing: pb = "continuation"
        case .complete: pb = "complete"
        }
        var s = "handle 0x\(hex(a.handle, width: 4)) PB \(pb) len \(a.data.count)"
        var fields: [(String, JSONValue)] = [("handle", .int(Int(a.handle))), ("boundary", .string(pb)), ("length", .int(a.data.count))]
        let key = LinkKey(handle: a.handle, sent: sent)
        var r = reassemblers[key] ?? ACLReassembler()
        if a.boundary != .continuing, let why = r.discardPartial() {
            s += " | L2CAP dropped: start fragment while \(why)"
            fields.append(("discardedPartialPDU", .string(why)))
        }
        let outcome = r.push(a)
        reassemblers[key] = r
        switch outcome {
        case .incomplete:
            s += " | L2CAP fragment, PDU continues"
            fields.append(("reassembly", .string("continues")))
        case .dropped(let why):
            s += " | L2CAP dropped: \(why)"
            fields.append(("reassembly", .string("dropped")))
            fields.append(("reassemblyError", .string(why)))
        case .complete(let cid, let payload):
            fields.append(("cid", .int(Int(cid))))
            s += " | L2CAP CID 0x\(hex(cid, width: 4))"
            switch cid {
            case L2CAPChannelID.att:
                s += " ATT len \(payload.count) | " + Self.att(payload, fields: &fields)
            case L2CAPChannelID.leSignaling, Self.bredrSignaling:
                let le = cid == L2CAPChannelID.leSignaling
                s += " \(le ? "LE signaling" : "signaling") len \(payload.count) | " + signaling(payload, single: le, handle: a.handle, sent: sent, fields: &fields)
            case L2CAPChannelID.securityManager:
                s += " " + Self.smp(payload, fields: &fields)
            default:
                if let channel = channelMap.channel(handle: a.handle, sent: sent, cid: cid) {
                    s += " " + dynamic(payload, channel: channel, key: ChannelMap.Key(handle: a.handle, sent: sent, cid: cid), fields: &fields)
                } else {
                    s += " len \(payload.count)"
                    fields.append(("payload", .string(hexString(payload))))
                }
            }
        }
        return (s, fields)
    }
}

/// "7.5" for 6 units of 1.25 ms.
func ms(_ units: UInt16, _ unit: Double) -> String {
    let v = Double(units) * unit
    return v == v.rounded() ? String(Int(v)) : String(v)
}

/// "12.000345", "-1.500000": microseconds as seconds with six decimals, for any value.
func formatSeconds(micros: Int128) -> String {
    let magnitude = micros.magnitude
    let frac = String(magnitude % 1_000_000)
    let sign = micros < 0 ? "-" : ""
    return "\(sign)\(magnitude / 1_000_000).\(String(repeating: "0", count: 6 - frac.count))\(frac)"
}

func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
}
