import BLEWire

/// Cuts an H4 byte stream (UART transport layer, Core Spec Vol 4, Part A, 2) into HCI packets.
///
/// Chunks of any size go in; whole packets come out byte-exact. Complete packets are decoded
/// straight from the chunk; only the tail of a packet cut across chunks is carried over, so
/// the carried bytes never exceed one packet (at most 1 + 4 + 65535 bytes). An unknown packet
/// indicator stops the framer with `.malformedStream`: H4 has no resynchronisation, and a
/// guess would feed garbage to the stack.
///
///     var framer = H4Framer(endpoint: "tcp:127.0.0.1:9000")
///     try chunk.withUnsafeBytes { try framer.feed($0) { packet in handle(packet) } }
public struct H4Framer: Sendable {
    /// Names the stream in error messages.
    public let endpoint: String
    /// Bytes of a packet whose end has not arrived yet (indicator first).
    private var partial: [UInt8] = []
    /// Total length of the partial packet (indicator included) once its header is known.
    private var partialTotal: Int?
    /// Bytes consumed since the stream began, for error offsets.
    public private(set) var streamOffset: Int = 0
    /// Set after a framing error; every later call reports it again.
    public private(set) var failure: TransportError?
    /// The payload array of the last ACL packet emitted from a chunk, refilled for the next
    /// one: when the stack kept no reference to it (the common case: a notification's value
    /// is copied out), the buffer is unique again and refilling it allocates nothing.
    private var aclPayload: [UInt8] = []

    /// The longest packet H4 can carry: an ACL packet with a 16-bit length.
    public static let maxPacketLength = 1 + 4 + 0xFFFF

    public init(endpoint: String) { self.endpoint = endpoint }

    /// True when no partial packet is pending.
    public var isAtPacketBoundary: Bool { partial.isEmpty }

    /// Consumes `chunk` and calls `emit` for each packet it completes, in order.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (HCIPacket) -> Void) throws(TransportError) {
        try feed(chunk, acl: { _ in false }, emit)
    }

    /// Like `feed(_:_:)`, offering each ACL data packet's raw bytes (the 4-octet header and the
    /// data, Vol 4, Part E, 5.4.2) to `acl` first; when it returns true the packet is consumed
    /// and no packet value is built for it. The bytes are valid only during the call.
    ///
    ///     try framer.feed(chunk, acl: { raw in inlet.take(raw) }) { packet in handle(packet) }
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, acl: (UnsafeRawBufferPointer) -> Bool,
                              _ emit: (HCIPacket) -> Void) throws(TransportError) {
        if let failure { throw failure }
        var at = 0
        let count = chunk.count
        let start = streamOffset
        defer { streamOffset = start + count }
        if !partial.isEmpty {
            at = completePartial(chunk, acl, emit)
            if !partial.isEmpty { return }
        }
        while at < count {
            let indicator = chunk[at]
            guard let type = HCIPacketType(rawValue: indicator) else {
                throw fail(indicator: indicator, offset: start + at)
            }
            let header = UnsafeRawBufferPointer(rebasing: chunk[(at + 1)...])
            guard let bodyLength = HCIPacket.bodyLength(type: type, header: header), bodyLength <= header.count else {
                // Cut: carry the tail over (bounded by one packet).
                partialTotal = HCIPacket.bodyLength(type: type, header: header).map { $0 + 1 }
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[at...]))
                return
            }
            let body = UnsafeRawBufferPointer(rebasing: header[..<bodyLength])
            if type == .acl {
                if !acl(body) { emit(aclPacket(body)) }
            } else {
                emit(Self.packet(type: type, body: body))
            }
            at += 1 + bodyLength
        }
    }

    /// Call at end of stream: throws `.lost` when the stream ended inside a packet.
    public func finish() throws(TransportError) {
        if let failure { throw failure }
        guard !partial.isEmpty else { return }
        let detail: String
        if let total = partialTotal {
            detail = "stream ended in the middle of a packet (\(partial.count) of \(total) bytes)"
        } else {
            let type = HCIPacketType(rawValue: partial[0]).map { "\($0)" } ?? "unknown"
            detail = "stream ended in the middle of a packet (\(partial.count) bytes of an \(type) packet header)"
        }
        throw .lost(endpoint: endpoint, reason: detail)
    }

    /// Appends from `chunk` to the carried packet; emits it when whole. Returns bytes used.
    private mutating func completePartial(_ chunk: UnsafeRawBufferPointer, _ acl: (UnsafeRawBufferPointer) -> Bool,
                                          _ emit: (HCIPacket) -> Void) -> Int {
        var used = 0
        if partialTotal == nil {
            // Header still incomplete: take bytes one header at a time (at most 4).
            guard let type = HCIPacketType(rawValue: partial[0]) else { return 0 }
            while partialTotal == nil && used < chunk.count {
                partial.append(chunk[used])
                used += 1
                partialTotal = partial.withUnsafeBytes { p in
                    HCIPacket.bodyLength(type: type, header: UnsafeRawBufferPointer(rebasing: p[1...])).map { $0 + 1 }
                }
            }
            guard partialTotal != nil else { return used }
        }
        let total = partialTotal ?? 0
        let take = min(total - partial.count, chunk.count - used)
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[used..<(used + take)]))
        used += take
        if partial.count == total, let type = HCIPacketType(rawValue: partial[0]) {
            let packet = partial.withUnsafeBytes { p -> HCIPacket? in
                let body = UnsafeRawBufferPointer(rebasing: p[1...])
                return type == .acl && acl(body) ? nil : Self.packet(type: type, body: body)
            }
            partial.removeAll(keepingCapacity: true)
            partialTotal = nil
            if let packet { emit(packet) }
        }
        return used
    }

    private mutating func fail(indicator: UInt8, offset: Int) -> TransportError {
        let error = TransportError.malformedStream(
            endpoint: endpoint,
            detail: "unknown packet indicator \(indicator.hex) at byte \(offset) of the stream (expected 0x01-0x05)")
        failure = error
        partial = []
        partialTotal = nil
        return error
    }

    /// An ACL packet whose payload is copied into `aclPayload` (length fields already checked).
    @inline(__always)
    private mutating func aclPacket(_ b: UnsafeRawBufferPointer) -> HCIPacket {
        let hf = UInt16(b[0]) | UInt16(b[1]) << 8
        let pb = ACLPacketBoundary(rawValue: UInt8((hf >> 12) & 0b11)) ?? .continuing
        let payload = UnsafeRawBufferPointer(rebasing: b[4...])
        // A large buffer is not kept for small packets: if the stack holds on to one, its
        // replacement would be allocated at the large capacity.
        if aclPayload.capacity > 512, aclPayload.capacity > 2 * payload.count { aclPayload = [] }
        aclPayload.removeAll(keepingCapacity: true)
        aclPayload.append(contentsOf: payload)
        return .acl(ACLDataPacket(handle: hf & 0x0FFF, boundary: pb, broadcast: UInt8(hf >> 14), data: aclPayload))
    }

    /// Builds a packet from a body whose length fields are already checked (one copy of the payload).
    @usableFromInline
    static func packet(type: HCIPacketType, body b: UnsafeRawBufferPointer) -> HCIPacket {
        switch type {
        case .command:
            let opcode = UInt16(b[0]) | UInt16(b[1]) << 8
            return .command(HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: Array(b[3...])))
        case .event:
            return .event(HCIEventPacket(code: b[0], parameters: Array(b[2...])))
        case .acl:
            let hf = UInt16(b[0]) | UInt16(b[1]) << 8
            let pb = ACLPacketBoundary(rawValue: UInt8((hf >> 12) & 0b11)) ?? .continuing
            return .acl(ACLDataPacket(handle: hf & 0x0FFF, boundary: pb, broadcast: UInt8(hf >> 14), data: Array(b[4...])))
        case .sco:
            return .sco(Array(b))
        case .iso:
            return .iso(Array(b))
        }
    }

    /// The body of an ACL packet read from a packet socket (indicator 0x02, length field
    /// matching the datagram), or nil for any other or malformed datagram.
    static func aclBody(ofDatagram raw: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard raw.count >= 5, raw[0] == HCIPacketType.acl.rawValue,
              Int(raw[3]) | Int(raw[4]) << 8 == raw.count - 5 else { return nil }
        return UnsafeRawBufferPointer(rebasing: raw[1...])
    }

    /// Decodes one whole packet read from a packet socket (indicator first, length exact).
    package static func decodeDatagram(_ raw: UnsafeRawBufferPointer, endpoint: String) throws(TransportError) -> HCIPacket {
        guard let first = raw.first else {
            throw .malformedStream(endpoint: endpoint, detail: "empty packet")
        }
        guard let type = HCIPacketType(rawValue: first) else {
            throw .malformedStream(endpoint: endpoint, detail: "unknown packet indicator \(first.hex) (expected 0x01-0x05)")
        }
        let header = UnsafeRawBufferPointer(rebasing: raw[1...])
        guard let length = HCIPacket.bodyLength(type: type, header: header), length == header.count else {
            throw .malformedStream(endpoint: endpoint, detail: "\(type) packet of \(raw.count) bytes whose length field does not match")
        }
        return packet(type: type, body: header)
    }
}
