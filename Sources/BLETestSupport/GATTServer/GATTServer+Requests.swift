import GATTClient

extension GATTServer {
    /// Answers one decoded PDU (Vol 3, Part F, 3.4); nil for commands and PDUs that get no answer.
    func handle(_ pdu: ATTPDU, link id: ObjectIdentifier) -> ATTPDU? {
        let mtu = Int(links[id]?.mtu ?? 23)
        func error(_ code: ATTErrorCode, _ handle: UInt16) -> ATTPDU { .errorResponse(request: pdu.opcode, handle: handle, error: code) }
        func invalidRange(_ r: ATTHandleRange) -> Bool { r.start == 0 || r.start > r.end }

        switch pdu {
        case .exchangeMTURequest(let clientRxMTU):
            links[id]?.mtu = max(23, min(serverMTU, clientRxMTU))
            return .exchangeMTUResponse(serverRxMTU: serverMTU)

        case .readByGroupTypeRequest(var range, let type):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            guard type == GATTAttributeType.primaryService || type == GATTAttributeType.secondaryService else {
                return error(.unsupportedGroupType, range.start)
            }
            if faults.repeatDiscoveryResponses { range.start = 1 }
            var list: [ATTGroupValue] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type {
                guard case .service(let end) = a.kind else { continue }
                if let first = list.first, first.value.count != a.value.count { break }
                let v = Array(a.value.prefix(min(mtu - 6, 251)))
                if 2 + (list.count + 1) * (4 + v.count) > mtu { break }
                list.append(ATTGroupValue(handle: a.handle, endGroupHandle: end, value: v))
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .readByGroupTypeResponse(list)

        case .findByTypeValueRequest(let range, let type, let value):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            var list: [ATTHandleRange] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type && a.value == value {
                if 1 + (list.count + 1) * 4 > mtu { break }
                if case .service(let end) = a.kind { list.append(ATTHandleRange(start: a.handle, end: end)) }
                else { list.append(ATTHandleRange(start: a.handle, end: a.handle)) }
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .findByTypeValueResponse(list)

        case .readByTypeRequest(let range, let type):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            var list: [ATTHandleValue] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type {
                if let code = readDenied(a, link: id) {
                    if list.isEmpty { return error(code, a.handle) }
                    break
                }
                let v = Array(value(a, link: id).prefix(min(mtu - 4, 253)))
                if let first = list.first, first.value.count != v.count { break }
                if 2 + (list.count + 1) * (2 + v.count) > mtu { break }
                list.append(ATTHandleValue(handle: a.handle, value: v))
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .readByTypeResponse(list)

        case .findInformationRequest(let range):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            var entries: [ATTHandleUUID] = []
            var format: ATTFindInformationFormat?
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end {
                let f: ATTFindInformationFormat = a.type.uuid16 != nil ? .uuid16 : .uuid128
                if format == nil { format = f }
                if f != format { break }
                if 2 + (entries.count + 1) * f.entrySize > mtu { break }
                entries.append(ATTHandleUUID(handle: a.handle, uuid: f == .uuid16 ? a.type : a.type.as128))
            }
            guard let format else { return error(.attributeNotFound, range.start) }
            return .findInformationResponse(format: format, entries: entries)

        case .readRequest(let handle):
            guard let i = table.index(of: handle) else { return error(.invalidHandle, handle) }
            if let code = readDenied(table.attributes[i], link: id) { return error(code, handle) }
            return .readResponse(value: Array(value(table.attributes[i], link: id).prefix(mtu - 1)))

        case .readBlobRequest(let handle, let offset):
            guard let i = table.index(of: handle) else { return error(.invalidHandle, handle) }
            if let code = readDenied(table.attributes[i], link: id) { return error(code, handle) }
            let v = value(table.attributes[i], link: id)
            guard Int(offset) <= v.count else { return error(.invalidOffset, handle) }
            return .readBlobResponse(value: Array(v[Int(offset)...].prefix(mtu - 1)))

        case .readMultipleRequest(let handles):
            var out: [UInt8] = []
            for h in handles {
                guard let i = table.index(of: h) else { return error(.invalidHandle, h) }
                if let code = readDenied(table.attributes[i], link: id) { return error(code, h) }
                out += value(table.attributes[i], link: id)
            }
            return .readMultipleResponse(values: Array(out.prefix(mtu - 1)))

        case .readMultipleVariableRequest(let handles):
            var list: [ATTLengthValue] = []
            var room = mtu - 1
            for h in handles {
                guard let i = table.index(of: h) else { return error(.invalidHandle, h) }
                if let code = readDenied(table.attributes[i], link: id) { return error(code, h) }
                let v = value(table.attributes[i], link: id)
                guard room >= 2 else { break }
                let part = Array(v.prefix(room - 2))
                list.append(ATTLengthValue(length: UInt16(clamping: v.count), value: part))
                room -= 2 + part.count
            }
            return .readMultipleVariableResponse(list)

        case .writeRequest(let handle, let value):
            if let code = write(value, handle: handle, link: id) { return error(code, handle) }
            return .writeResponse

        case .writeCommand(let handle, let value):
            _ = write(value, handle: handle, link: id)
            return nil

        case .prepareWriteRequest(let handle, let offset, let value):
            guard let i = table.index(of: handle) else { return error(.invalidHandle, handle) }
            if let code = writeDenied(table.attributes[i], link: id) { return error(code, handle) }
            guard (links[id]?.prepareQueue.count ?? 0) < prepareQueueLimit else { return error(.prepareQueueFull, handle) }
            links[id]?.prepareQueue.append((handle, offset, value))
            switch faults.prepareWriteEcho {
            case .handle: return .prepareWriteResponse(handle: handle &+ 1, offset: offset, value: value)
            case .offset: return .prepareWriteResponse(handle: handle, offset: offset &+ 1, value: value)
            case .value: return .prepareWriteResponse(handle: handle, offset: offset, value: value.map { $0 ^ 0xFF })
            case nil: return .prepareWriteResponse(handle: handle, offset: offset, value: value)
            }

        case .executeWriteRequest(let flags):
            let queued = links[id]?.prepareQueue ?? []
            links[id]?.prepareQueue = []
            guard flags == .write else { return .executeWriteResponse }
            var assembled: [UInt16: [UInt8]] = [:]
            var order: [UInt16] = []
            for q in queued {
                guard let i = table.index(of: q.handle) else { return error(.invalidHandle, q.handle) }
                var v = assembled[q.handle] ?? table.attributes[i].value
                if assembled[q.handle] == nil { order.append(q.handle) }
                guard Int(q.offset) <= v.count else { return error(.invalidOffset, q.handle) }
                v = Array(v.prefix(Int(q.offset))) + q.value
                assembled[q.handle] = v
            }
            for h in order {
                guard let v = assembled[h], let i = table.index(of: h) else { continue }
                if case .value(let c) = table.attributes[i].kind, v.count > table.characteristics[c].maximumLength {
                    return error(.invalidAttributeValueLength, h)
                }
            }
            for h in order {
                if let v = assembled[h], let code = write(v, handle: h, link: id) { return error(code, h) }
            }
            return .executeWriteResponse

        case .handleValueConfirmation, .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification, .signedWriteCommand:
            return nil

        default:
            return pdu.opcode.isCommand ? nil : error(.requestNotSupported, 0)
        }
    }

    /// The value a link reads (its own CCCD value for a CCCD).
    func value(_ a: ServerAttribute, link id: ObjectIdentifier) -> [UInt8] {
        if case .cccd = a.kind {
            let v = links[id]?.cccd[a.handle] ?? 0
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        }
        return a.value
    }

    func security(_ id: ObjectIdentifier) -> (encrypted: Bool, authenticated: Bool, keySize: Int) {
        guard let s = links[id]?.link as? any ATTServerLinkSecurity else { return (false, false, 0) }
        return (s.isEncrypted, s.isAuthenticated, s.isEncrypted ? s.encryptionKeySize : 0)
    }

    /// Why a read is refused (Vol 3, Part F, 3.2.5), or nil.
    func readDenied(_ a: ServerAttribute, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard a.permissions.readable else { return .readNotPermitted }
        return securityDenied(a.permissions, authenticated: .readAuthenticated, encrypted: .readEncrypted, link: id)
    }

    func writeDenied(_ a: ServerAttribute, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard a.permissions.writable else { return .writeNotPermitted }
        return securityDenied(a.permissions, authenticated: .writeAuthenticated, encrypted: .writeEncrypted, link: id)
    }

    /// Why the link's security is not enough for `permissions` (Vol 3, Part F, 3.2.5), or nil.
    private func securityDenied(_ permissions: GATTDatabase.Permissions, authenticated: GATTDatabase.Permissions,
                                encrypted: GATTDatabase.Permissions, link id: ObjectIdentifier) -> ATTErrorCode? {
        let s = security(id)
        if permissions.contains(authenticated), !s.authenticated { return .insufficientAuthentication }
        if permissions.contains(encrypted) || permissions.contains(.fullKeySize), !s.encrypted { return .insufficientEncryption }
        if permissions.contains(.fullKeySize), s.keySize < 16 { return .encryptionKeySizeTooShort }
        return nil
    }

    /// Applies a write, or says why not.
    func write(_ value: [UInt8], handle: UInt16, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard let i = table.index(of: handle) else { return .invalidHandle }
        let a = table.attributes[i]
        if let code = writeDenied(a, link: id) { return code }
        switch a.kind {
        case .cccd(_, let properties):
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let v = UInt16(value[0]) | UInt16(value[1]) << 8
            if v & 0x0001 != 0 && !properties.contains(.notify) || v & 0x0002 != 0 && !properties.contains(.indicate) || v > 3 {
                return .cccdImproperlyConfigured
            }
            links[id]?.cccd[handle] = v
        case .value(let c):
            let rules = table.characteristics[c]
            guard value.count <= rules.maximumLength else { return .invalidAttributeValueLength }
            if let accepted = rules.acceptedWrites, !accepted.contains(value) { return rules.rejectWith }
            table.attributes[i].value = value
        default:
            table.attributes[i].value = value
        }
        writes.append((handle, value))
        return nil
    }
}
