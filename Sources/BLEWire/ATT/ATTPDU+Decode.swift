extension ATTPDU {
    /// Decodes one ATT PDU (an L2CAP SDU on the ATT channel). Total: empty, truncated or
    /// inconsistent bytes throw; an undefined opcode gives `.unknown`.
    ///
    ///     let pdu = try ATTPDU(bytes: sdu)
    public init(bytes: [UInt8]) throws(DecodeError) {
        guard let first = bytes.first else { throw .truncated(what: "ATT PDU", needed: 1) }
        let body = 1..<bytes.count
        switch first {
        case 0x01:
            var r = ByteReader(bytes, range: body, context: "Error Response")
            let request = try r.u8(), handle = try r.u16(), code = try r.u8()
            try r.expectEnd()
            self = .errorResponse(request: ATTOpcode(request), handle: handle, error: ATTErrorCode(code))
        case 0x02:
            var r = ByteReader(bytes, range: body, context: "Exchange MTU Request")
            let mtu = try r.u16()
            try r.expectEnd()
            self = .exchangeMTURequest(clientRxMTU: mtu)
        case 0x03:
            var r = ByteReader(bytes, range: body, context: "Exchange MTU Response")
            let mtu = try r.u16()
            try r.expectEnd()
            self = .exchangeMTUResponse(serverRxMTU: mtu)
        case 0x04:
            var r = ByteReader(bytes, range: body, context: "Find Information Request")
            let range = try r.handleRange()
            try r.expectEnd()
            self = .findInformationRequest(range)
        case 0x05:
            self = try Self.findInformationResponse(bytes)
        case 0x06:
            var r = ByteReader(bytes, range: body, context: "Find By Type Value Request")
            let range = try r.handleRange()
            let type = try r.u16()
            self = .findByTypeValueRequest(range: range, type: BluetoothUUID(uuid16: type), value: r.rest())
        case 0x07:
            var r = ByteReader(bytes, range: body, context: "Find By Type Value Response")
            try r.requireWholeEntries(of: 4, list: "Handles Information List")
            var list: [ATTHandleRange] = []
            list.reserveCapacity(r.remaining / 4)
            while !r.isAtEnd { list.append(try r.handleRange()) }
            self = .findByTypeValueResponse(list)
        case 0x08:
            var r = ByteReader(bytes, range: body, context: "Read By Type Request")
            let range = try r.handleRange()
            self = .readByTypeRequest(range: range, type: try r.attributeType())
        case 0x09:
            self = try Self.readByTypeResponse(bytes)
        case 0x0A:
            var r = ByteReader(bytes, range: body, context: "Read Request")
            let handle = try r.u16()
            try r.expectEnd()
            self = .readRequest(handle: handle)
        case 0x0B:
            self = .readResponse(value: Array(bytes[body]))
        case 0x0C:
            var r = ByteReader(bytes, range: body, context: "Read Blob Request")
            let handle = try r.u16(), offset = try r.u16()
            try r.expectEnd()
            self = .readBlobRequest(handle: handle, offset: offset)
        case 0x0D:
            self = .readBlobResponse(value: Array(bytes[body]))
        case 0x0E:
            var r = ByteReader(bytes, range: body, context: "Read Multiple Request")
            self = .readMultipleRequest(handles: try r.setOfHandles())
        case 0x0F:
            self = .readMultipleResponse(values: Array(bytes[body]))
        case 0x10:
            var r = ByteReader(bytes, range: body, context: "Read By Group Type Request")
            let range = try r.handleRange()
            self = .readByGroupTypeRequest(range: range, type: try r.attributeType())
        case 0x11:
            self = try Self.readByGroupTypeResponse(bytes)
        case 0x12:
            var r = ByteReader(bytes, range: body, context: "Write Request")
            let handle = try r.u16()
            self = .writeRequest(handle: handle, value: r.rest())
        case 0x13:
            try ByteReader(bytes, range: body, context: "Write Response").expectEnd()
            self = .writeResponse
        case 0x16:
            var r = ByteReader(bytes, range: body, context: "Prepare Write Request")
            let handle = try r.u16(), offset = try r.u16()
            self = .prepareWriteRequest(handle: handle, offset: offset, value: r.rest())
        case 0x17:
            var r = ByteReader(bytes, range: body, context: "Prepare Write Response")
            let handle = try r.u16(), offset = try r.u16()
            self = .prepareWriteResponse(handle: handle, offset: offset, value: r.rest())
        case 0x18:
            var r = ByteReader(bytes, range: body, context: "Execute Write Request")
            let raw = try r.u8()
            try r.expectEnd()
            guard let flags = ATTExecuteWriteFlags(rawValue: raw) else {
                throw .invalidValue(what: "Execute Write Request", field: "Flags", value: Int(raw))
            }
            self = .executeWriteRequest(flags)
        case 0x19:
            try ByteReader(bytes, range: body, context: "Execute Write Response").expectEnd()
            self = .executeWriteResponse
        case 0x1B:
            var r = ByteReader(bytes, range: body, context: "Handle Value Notification")
            let handle = try r.u16()
            self = .handleValueNotification(handle: handle, value: r.rest())
        case 0x1D:
            var r = ByteReader(bytes, range: body, context: "Handle Value Indication")
            let handle = try r.u16()
            self = .handleValueIndication(handle: handle, value: r.rest())
        case 0x1E:
            try ByteReader(bytes, range: body, context: "Handle Value Confirmation").expectEnd()
            self = .handleValueConfirmation
        case 0x20:
            var r = ByteReader(bytes, range: body, context: "Read Multiple Variable Request")
            self = .readMultipleVariableRequest(handles: try r.setOfHandles())
        case 0x21:
            self = try Self.readMultipleVariableResponse(bytes)
        case 0x23:
            self = try Self.multipleHandleValueNotification(bytes)
        case 0x52:
            var r = ByteReader(bytes, range: body, context: "Write Command")
            let handle = try r.u16()
            self = .writeCommand(handle: handle, value: r.rest())
        case 0xD2:
            var r = ByteReader(bytes, range: body, context: "Signed Write Command")
            let handle = try r.u16()
            try r.need(12)
            let value = try r.bytes(r.remaining - 12)
            let counter = try r.u32(), mac = try r.u64()
            self = .signedWriteCommand(handle: handle, value: value,
                                       signature: ATTSignature(signCounter: counter, mac: mac))
        default:
            self = .unknown(opcode: first, parameters: Array(bytes[body]))
        }
    }

    /// 3.4.3.2: Format, then 4- or 18-octet entries.
    private static func findInformationResponse(_ bytes: [UInt8]) throws(DecodeError) -> ATTPDU {
        var r = ByteReader(bytes, range: 1..<bytes.count, context: "Find Information Response")
        let raw = try r.u8()
        guard let format = ATTFindInformationFormat(rawValue: raw) else {
            throw .invalidValue(what: "Find Information Response", field: "Format", value: Int(raw))
        }
        try r.requireWholeEntries(of: format.entrySize, list: "Information Data")
        var entries: [ATTHandleUUID] = []
        entries.reserveCapacity(r.remaining / format.entrySize)
        while !r.isAtEnd {
            let handle = try r.u16()
            let uuid: BluetoothUUID
            if format == .uuid16 {
                uuid = BluetoothUUID(uuid16: try r.u16())
            } else {
                uuid = BluetoothUUID(uuid128: UInt128(try r.u64()) | UInt128(try r.u64()) << 64)
            }
            entries.append(ATTHandleUUID(handle: handle, uuid: uuid))
        }
        return .findInformationResponse(format: format, entries: entries)
    }

    /// 3.4.4.2: Length (handle + value), then entries of that size.
    private static func readByTypeResponse(_ bytes: [UInt8]) throws(DecodeError) -> ATTPDU {
        var r = ByteReader(bytes, range: 1..<bytes.count, context: "Read By Type Response")
        let length = Int(try r.u8())
        guard length >= 2 else {
            throw .invalidValue(what: "Read By Type Response", field: "Length (entries hold a 2-octet handle)", value: length)
        }
        try r.requireWholeEntries(of: length, list: "Attribute Data List")
        var list: [ATTHandleValue] = []
        list.reserveCapacity(r.remaining / length)
        while !r.isAtEnd {
            let handle = try r.u16()
            list.append(ATTHandleValue(handle: handle, value: try r.bytes(length - 2)))
        }
        return .readByTypeResponse(list)
    }

    /// 3.4.4.10: Length (handle + end group handle + value), then entries of that size.
    private static func readByGroupTypeResponse(_ bytes: [UInt8]) throws(DecodeError) -> ATTPDU {
        var r = ByteReader(bytes, range: 1..<bytes.count, context: "Read By Group Type Response")
        let length = Int(try r.u8())
        guard length >= 4 else {
            throw .invalidValue(what: "Read By Group Type Response", field: "Length (entries hold two 2-octet handles)", value: length)
        }
        try r.requireWholeEntries(of: length, list: "Attribute Data List")
        var list: [ATTGroupValue] = []
        list.reserveCapacity(r.remaining / length)
        while !r.isAtEnd {
            let handle = try r.u16(), end = try r.u16()
            list.append(ATTGroupValue(handle: handle, endGroupHandle: end, value: try r.bytes(length - 4)))
        }
        return .readByGroupTypeResponse(list)
    }

    /// 3.4.4.12: Length Value Tuples; the last value may be cut short at ATT_MTU - 1.
    private static func readMultipleVariableResponse(_ bytes: [UInt8]) throws(DecodeError) -> ATTPDU {
        var r = ByteReader(bytes, range: 1..<bytes.count, context: "Read Multiple Variable Response")
        guard !r.isAtEnd else {
            throw .malformed(what: "Read Multiple Variable Response", detail: "empty Length Value Tuple List")
        }
        var list: [ATTLengthValue] = []
        while !r.isAtEnd {
            let length = try r.u16()
            let present = min(Int(length), r.remaining)
            list.append(ATTLengthValue(length: length, value: try r.bytes(present)))
        }
        return .readMultipleVariableResponse(list)
    }

    /// 3.4.7.4: Handle Length Value Tuples, each complete.
    private static func multipleHandleValueNotification(_ bytes: [UInt8]) throws(DecodeError) -> ATTPDU {
        var r = ByteReader(bytes, range: 1..<bytes.count, context: "Multiple Handle Value Notification")
        guard !r.isAtEnd else {
            throw .malformed(what: "Multiple Handle Value Notification", detail: "empty Handle Length Value Tuple List")
        }
        var list: [ATTHandleValue] = []
        while !r.isAtEnd {
            let handle = try r.u16(), length = try r.u16()
            list.append(ATTHandleValue(handle: handle, value: try r.bytes(Int(length))))
        }
        return .multipleHandleValueNotification(list)
    }
}

extension ByteReader {
    @inlinable
    mutating func handleRange() throws(DecodeError) -> ATTHandleRange {
        let start = try u16()
        return ATTHandleRange(start: start, end: try u16())
    }

    /// The rest as a 16- or 128-bit Attribute Type (Read By Type / Read By Group Type).
    mutating func attributeType() throws(DecodeError) -> BluetoothUUID {
        switch remaining {
        case 2: return BluetoothUUID(uuid16: try u16())
        case 16:
            let low = try u64()
            return BluetoothUUID(uuid128: UInt128(low) | UInt128(try u64()) << 64)
        default:
            throw .invalidValue(what: "\(context)", field: "Attribute Type length (2 or 16 octets)", value: remaining)
        }
    }

    /// The rest as a Set Of Handles: two or more (Read Multiple, Read Multiple Variable).
    mutating func setOfHandles() throws(DecodeError) -> [UInt16] {
        guard remaining >= 4, remaining % 2 == 0 else {
            throw .malformed(what: "\(context)", detail: "Set Of Handles of \(remaining) octets (needs two or more 2-octet handles)")
        }
        var handles: [UInt16] = []
        handles.reserveCapacity(remaining / 2)
        while !isAtEnd { handles.append(try u16()) }
        return handles
    }

    /// The rest must be one or more whole entries of `size` octets.
    func requireWholeEntries(of size: Int, list: String) throws(DecodeError) {
        guard remaining > 0 else { throw .malformed(what: "\(context)", detail: "empty \(list)") }
        guard remaining % size == 0 else {
            throw .malformed(what: "\(context)", detail: "\(list) of \(remaining) octets is not a whole number of \(size)-octet entries")
        }
    }
}
