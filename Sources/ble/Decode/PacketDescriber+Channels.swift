import BLEWire

/// Signaling C-frames and the data of dynamic channels (Vol 3, Part A, 3 and 4) in `ble decode`.
extension PacketDescriber {
    /// BR/EDR signaling channel (Vol 3, Part A, 2.1).
    static let bredrSignaling: UInt16 = 0x0001
    /// PSMs whose SDUs are ATT PDUs: ATT over BR/EDR and EATT (Assigned Numbers, L2CAP PSM).
    static let attPSM: UInt16 = 0x001F
    static let eattPSM: UInt16 = 0x0027

    /// Decodes the commands of one C-frame and lets the channel map learn from them.
    mutating func signaling(_ payload: [UInt8], single: Bool, handle: UInt16, sent: Bool, fields: inout [(String, JSONValue)]) -> String {
        var texts: [String] = []
        var objects: [JSONValue] = []
        for command in Self.signalingCommands(payload, single: single) {
            switch command {
            case .success(let cmd):
                channelMap.observe(cmd, handle: handle, sent: sent)
                let (text, f) = Self.signalingCommand(cmd)
                texts.append(text)
                objects.append(.object(f))
            case .failure(let bad):
                texts.append("malformed signaling command (\(hexString(bad.bytes)))")
                objects.append(.object([("malformed", .string(hexString(bad.bytes)))]))
            }
        }
        fields.append(("signaling", .array(objects)))
        return texts.joined(separator: "; ")
    }

    /// The payload of a dynamic channel: ATT PDUs on PSM 0x001F (B-frames) and 0x0027 (SDUs
    /// of K-frames), other SDUs as hex.
    mutating func dynamic(_ payload: [UInt8], channel: ChannelMap.Channel, key: ChannelMap.Key, fields: inout [(String, JSONValue)]) -> String {
        let psm = Self.psmName(channel.psm)
        fields.append(("psm", .int(Int(channel.psm))))
        guard case .creditBased = channel.framing, var reassembler = channel.reassembler else {
            if channel.psm == Self.attPSM {
                fields.append(("channel", .string("ATT")))
                return "PSM \(psm) len \(payload.count) | " + Self.att(payload, fields: &fields)
            }
            fields.append(("channel", .string("B-frame")))
            fields.append(("payload", .string(hexString(payload))))
            return "PSM \(psm) B-frame len \(payload.count): \(hexString(payload.prefix(64)))\(payload.count > 64 ? "..." : "")"
        }
        fields.append(("channel", .string(channel.psm == Self.eattPSM ? "EATT" : "K-frame")))
        var s = "PSM \(psm) K-frame len \(payload.count)"
        if reassembler.isIdle, payload.count >= 2 {
            let length = Int(payload[0]) | Int(payload[1]) << 8
            fields.append(("sduLength", .int(length)))
            s += " SDU length \(length)"
        }
        fields.append(("kframe", .string(hexString(payload))))
        var updated = channel
        defer { channelMap.update(key, updated) }
        do {
            let done = try reassembler.receive(payload[...])
            updated.reassembler = reassembler
            guard let (sdu, frames) = done else { return s + ", SDU continues" }
            fields.append(("frames", .int(frames)))
            if channel.psm == Self.eattPSM {
                return s + " | EATT SDU len \(sdu.count) | " + Self.att(sdu, fields: &fields)
            }
            fields.append(("sdu", .string(hexString(sdu))))
            return s + " | SDU len \(sdu.count): \(hexString(sdu.prefix(64)))\(sdu.count > 64 ? "..." : "")"
        } catch {
            updated.reassembler = reassembler
            fields.append(("kframeError", .string("\(error)")))
            return s + " | malformed: \(error)"
        }
    }
}
