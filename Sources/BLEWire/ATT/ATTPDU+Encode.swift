extension ATTPDU {
    /// The PDU's wire bytes (opcode then parameters, Vol 3, Part F, 3.3). A PDU decoded by
    /// `init(bytes:)` encodes back to the same bytes. For values built by hand: list entries of
    /// Read By Type / Read By Group Type Responses must share one value length (the first
    /// entry's is written as Length); Find By Type Value's `type` is written as its 16-bit
    /// short form; a 32-bit Attribute Type is written in its 128-bit form.
    ///
    ///     ATTPDU.readBlobRequest(handle: 0x0010, offset: 22).bytes   // [0x0C, 0x10, 0x00, 0x16, 0x00]
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.append(opcode.rawValue)
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request.rawValue); out.appendLE(handle); out.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            out.appendLE(mtu)
        case .findInformationRequest(let range):
            out.append(range)
        case .findInformationResponse(let format, let entries):
            out.reserveCapacity(2 + entries.count * format.entrySize)
            out.append(format.rawValue)
            for e in entries {
                out.appendLE(e.handle)
                if format == .uuid16 { out.appendLE(e.uuid.short16) } else { out.appendLE128(e.uuid.value) }
            }
        case .findByTypeValueRequest(let range, let type, let value):
            out.reserveCapacity(7 + value.count)
            out.append(range); out.appendLE(type.short16); out.append(contentsOf: value)
        case .findByTypeValueResponse(let list):
            out.reserveCapacity(1 + 4 * list.count)
            for r in list { out.append(r) }
        case .readByTypeRequest(let range, let type), .readByGroupTypeRequest(let range, let type):
            out.append(range); out.appendAttributeType(type)
        case .readByTypeResponse(let list):
            let valueLength = list.first?.value.count ?? 0
            out.reserveCapacity(2 + list.count * (2 + valueLength))
            out.append(UInt8(truncatingIfNeeded: 2 + valueLength))
            for e in list { out.appendLE(e.handle); out.append(contentsOf: e.value) }
        case .readRequest(let handle):
            out.appendLE(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            out.append(contentsOf: value)
        case .readBlobRequest(let handle, let offset):
            out.appendLE(handle); out.appendLE(offset)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            out.reserveCapacity(1 + 2 * handles.count)
            for h in handles { out.appendLE(h) }
        case .readByGroupTypeResponse(let list):
            let valueLength = list.first?.value.count ?? 0
            out.reserveCapacity(2 + list.count * (4 + valueLength))
            out.append(UInt8(truncatingIfNeeded: 4 + valueLength))
            for e in list { out.appendLE(e.handle); out.appendLE(e.endGroupHandle); out.append(contentsOf: e.value) }
        case .readMultipleVariableResponse(let list):
            for t in list { out.appendLE(t.length); out.append(contentsOf: t.value) }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            out.reserveCapacity(3 + value.count)
            out.appendLE(handle); out.append(contentsOf: value)
        case .signedWriteCommand(let handle, let value, let signature):
            out.reserveCapacity(15 + value.count)
            out.appendLE(handle); out.append(contentsOf: value)
            out.appendLE(signature.signCounter); out.appendLE(signature.mac)
        case .prepareWriteRequest(let handle, let offset, let value),
             .prepareWriteResponse(let handle, let offset, let value):
            out.reserveCapacity(5 + value.count)
            out.appendLE(handle); out.appendLE(offset); out.append(contentsOf: value)
        case .executeWriteRequest(let flags):
            out.append(flags.rawValue)
        case .multipleHandleValueNotification(let list):
            for e in list {
                out.appendLE(e.handle); out.appendLE(UInt16(truncatingIfNeeded: e.value.count)); out.append(contentsOf: e.value)
            }
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .unknown(_, let parameters):
            out.append(contentsOf: parameters)
        }
        return out
    }
}

extension BluetoothUUID {
    /// Bits 96-111: the 16-bit short form of a Bluetooth Base UUID value.
    var short16: UInt16 { UInt16(truncatingIfNeeded: value >> 96) }
}

extension Array where Element == UInt8 {
    mutating func append(_ range: ATTHandleRange) { appendLE(range.start); appendLE(range.end) }

    /// 16-bit UUIDs as 2 octets, every other width as 16.
    mutating func appendAttributeType(_ type: BluetoothUUID) {
        if type.width == 2 { appendLE(type.short16) } else { appendLE128(type.value) }
    }
}
