/// The H4 packet indicator (Core Spec Vol 4, Part A, 2).
public enum HCIPacketType: UInt8, Sendable, CustomStringConvertible {
    case command = 0x01, acl = 0x02, sco = 0x03, event = 0x04, iso = 0x05

    @usableFromInline var packetContext: StaticString {
        switch self {
        case .command: return "HCI Command packet"
        case .acl: return "HCI ACL Data packet"
        case .sco: return "HCI SCO Data packet"
        case .event: return "HCI Event packet"
        case .iso: return "HCI ISO Data packet"
        }
    }

    public var description: String {
        switch self {
        case .command: return "Command"
        case .acl: return "ACL"
        case .sco: return "SCO"
        case .event: return "Event"
        case .iso: return "ISO"
        }
    }
}

/// An HCI command opcode: OGF (6 bits) and OCF (10 bits).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    @inlinable public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF) }
    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x3FF }
    public var description: String {
        let code = rawValue.hex
        if let name = HCIOpcode.names[rawValue] { return "\(name) (\(code))" }
        return "opcode \(code) (OGF 0x\(String(ogf, radix: 16)), OCF 0x\(String(ocf, radix: 16)))"
    }
}

/// An HCI command packet: opcode and parameters (Vol 4, Part E, 5.4.1).
public struct HCICommandPacket: Hashable, Sendable {
    public var opcode: HCIOpcode
    public var parameters: [UInt8]
    @inlinable public init(opcode: HCIOpcode, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.parameters = parameters
    }
}

/// An HCI event packet: event code and parameters (Vol 4, Part E, 5.4.4).
public struct HCIEventPacket: Hashable, Sendable {
    public var code: UInt8
    public var parameters: [UInt8]
    @inlinable public init(code: UInt8, parameters: [UInt8]) {
        self.code = code
        self.parameters = parameters
    }
}

/// Packet_Boundary_Flag of an ACL data packet (Vol 4, Part E, 5.4.2).
public enum ACLPacketBoundary: UInt8, Sendable {
    /// First non-automatically-flushable packet (host to controller start).
    case firstNonFlushable = 0b00
    case continuing = 0b01
    /// First automatically-flushable packet (controller to host start on LE).
    case firstFlushable = 0b10
    /// A complete L2CAP PDU, automatically flushable (BR/EDR only; kept for round trips).
    case complete = 0b11
}

/// An HCI ACL data packet (Vol 4, Part E, 5.4.2).
public struct ACLDataPacket: Hashable, Sendable {
    /// Connection_Handle, 12 bits.
    public var handle: UInt16
    public var boundary: ACLPacketBoundary
    /// Broadcast_Flag, 2 bits.
    public var broadcast: UInt8
    public var data: [UInt8]

    @inlinable
    public init(handle: UInt16, boundary: ACLPacketBoundary, broadcast: UInt8 = 0, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.boundary = boundary
        self.broadcast = broadcast & 0b11
        self.data = data
    }
}

/// One HCI packet of any type, as carried by a transport.
///
///     let p = try HCIPacket(h4: [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])   // Command Complete for HCI_Reset
public enum HCIPacket: Hashable, Sendable {
    case command(HCICommandPacket)
    case acl(ACLDataPacket)
    case event(HCIEventPacket)
    /// SCO and ISO data are not used by an LE central; kept raw (header included) for round trips.
    case sco([UInt8])
    case iso([UInt8])

    public var type: HCIPacketType {
        switch self {
        case .command: return .command
        case .acl: return .acl
        case .event: return .event
        case .sco: return .sco
        case .iso: return .iso
        }
    }

    /// Header length and the length field's position for each packet type.
    /// Returns the total body length once `header` holds at least the header, or nil if more is needed.
    @inlinable
    public static func bodyLength(type: HCIPacketType, header: UnsafeRawBufferPointer) -> Int? {
        switch type {
        case .command:
            guard header.count >= 3 else { return nil }
            return 3 + Int(header[2])
        case .acl:
            guard header.count >= 4 else { return nil }
            return 4 + (Int(header[2]) | Int(header[3]) << 8)
        case .sco:
            guard header.count >= 3 else { return nil }
            return 3 + Int(header[2])
        case .event:
            guard header.count >= 2 else { return nil }
            return 2 + Int(header[1])
        case .iso:
            guard header.count >= 4 else { return nil }
            return 4 + (Int(header[2]) | Int(header[3] & 0x3F) << 8)
        }
    }

    /// Decodes a packet body (header and payload, no indicator). The length field must match.
    public init(type: HCIPacketType, body: [UInt8]) throws(DecodeError) {
        var r = ByteReader(body, context: type.packetContext)
        switch type {
        case .command:
            let opcode = try r.u16()
            let len = Int(try r.u8())
            let params = try r.bytes(len)
            try r.expectEnd()
            self = .command(HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: params))
        case .acl:
            let hf = try r.u16()
            let len = Int(try r.u16())
            let data = try r.bytes(len)
            try r.expectEnd()
            let pb = ACLPacketBoundary(rawValue: UInt8((hf >> 12) & 0b11)) ?? .continuing
            self = .acl(ACLDataPacket(handle: hf & 0x0FFF, boundary: pb, broadcast: UInt8(hf >> 14), data: data))
        case .event:
            let code = try r.u8()
            let len = Int(try r.u8())
            let params = try r.bytes(len)
            try r.expectEnd()
            self = .event(HCIEventPacket(code: code, parameters: params))
        case .sco:
            try r.skip(2)
            let len = Int(try r.u8())
            try r.skip(len)
            try r.expectEnd()
            self = .sco(body)
        case .iso:
            try r.skip(2)
            let len = Int(try r.u16() & 0x3FFF)
            try r.skip(len)
            try r.expectEnd()
            self = .iso(body)
        }
    }

    /// Decodes one complete H4 packet (indicator byte first).
    public init(h4 bytes: [UInt8]) throws(DecodeError) {
        guard let first = bytes.first else { throw .truncated(what: "H4 packet", needed: 1) }
        guard let type = HCIPacketType(rawValue: first) else {
            throw .invalidValue(what: "H4 packet", field: "packet indicator", value: Int(first))
        }
        try self.init(type: type, body: Array(bytes.dropFirst()))
    }

    /// The body: header and payload, without the H4 indicator.
    public var body: [UInt8] {
        var out: [UInt8] = []
        encodeBody(into: &out)
        return out
    }

    /// Indicator, header and payload.
    public var h4: [UInt8] {
        var out: [UInt8] = [type.rawValue]
        encodeBody(into: &out)
        return out
    }

    public func encodeBody(into out: inout [UInt8]) {
        switch self {
        case .command(let c):
            out.appendLE(c.opcode.rawValue)
            out.append(UInt8(truncatingIfNeeded: c.parameters.count))
            out.append(contentsOf: c.parameters)
        case .acl(let a):
            out.appendLE(a.handle | UInt16(a.boundary.rawValue) << 12 | UInt16(a.broadcast) << 14)
            out.appendLE(UInt16(truncatingIfNeeded: a.data.count))
            out.append(contentsOf: a.data)
        case .event(let e):
            out.append(e.code)
            out.append(UInt8(truncatingIfNeeded: e.parameters.count))
            out.append(contentsOf: e.parameters)
        case .sco(let raw), .iso(let raw):
            out.append(contentsOf: raw)
        }
    }
}
