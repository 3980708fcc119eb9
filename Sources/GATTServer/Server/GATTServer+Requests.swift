import GATTClient
import ATT
import BLEWire

extension GATTServer {
    /// How a PDU is answered: not at all (commands), at once, or after async handlers ran.
    enum Answer {
        case none
        case answer(ATTPDU)
        case deferred(@Sendable () async -> ATTPDU?)
    }

    /// Answers one decoded PDU (Vol 3, Part F, 3.4).
    func handle(_ pdu: ATTPDU, pdu bytes: [UInt8], link id: ObjectIdentifier) -> Answer {
        let mtu = Int(links[id]?.mtu ?? 23)
        func error(_ code: ATTErrorCode, _ handle: UInt16) -> Answer { .answer(.errorResponse(request: pdu.opcode, handle: handle, error: code)) }
        func invalidRange(_ r: ATTHandleRange) -> Bool { r.start == 0 || r.start > r.end }

        switch pdu {
        case .exchangeMTURequest(let clientRxMTU):
            // An enhanced bearer's ATT_MTU is its L2CAP MTU (Part F, 3.4.2.1: not exchanged there).
            if links[id]?.client != nil { return error(.requestNotSupported, 0) }
            links[id]?.mtu = max(23, min(serverMTU, clientRxMTU))
            return .answer(.exchangeMTUResponse(serverRxMTU: serverMTU))

        case .readByGroupTypeRequest(let range, let type):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            guard type == GATTAttributeType.primaryService || type == GATTAttributeType.secondaryService else {
                return error(.unsupportedGroupType, range.start)
            }
            var list: [ATTGroupValue] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type {
                guard case .service(let end) = a.kind else { continue }
                if let first = list.first, first.value.count != a.value.count { break }
                let v = Array(a.value.prefix(min(mtu - 6, 251)))
                if 2 + (list.count + 1) * (4 + v.count) > mtu { break }
                list.append(ATTGroupValue(handle: a.handle, endGroupHandle: end, value: v))
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .answer(.readByGroupTypeResponse(list))

        case .findByTypeValueRequest(let range, let type, let value):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            var list: [ATTHandleRange] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type && a.value == value {
                if 1 + (list.count + 1) * 4 > mtu { break }
                if case .service(let end) = a.kind { list.append(ATTHandleRange(start: a.handle, end: end)) }
                else { list.append(ATTHandleRange(start: a.handle, end: a.handle)) }
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .answer(.findByTypeValueResponse(list))

        case .readByTypeRequest(let range, let type):
            if invalidRange(range) { return error(.invalidHandle, range.start) }
            if type == GATTAttributeType.databaseHash { links[id]?.changeAware = true; rememberBondState(id) }
            var list: [ATTHandleValue] = []
            for a in table.attributes where a.handle >= range.start && a.handle <= range.end && a.type == type {
                if let code = readDenied(a, link: id) {
                    if list.isEmpty { return error(code, a.handle) }
                    break
                }
                if let (handler, request) = readHandler(a, link: id, offset: 0) {
                    // A served value is answered alone (it may be any length).
                    if !list.isEmpty { break }
                    return .deferred {
                        switch await handler(request) {
                        case .value(let v): return .readByTypeResponse([ATTHandleValue(handle: a.handle, value: Array(v.prefix(min(mtu - 4, 253))))])
                        case .refused(let code): return .errorResponse(request: .readByTypeRequest, handle: a.handle, error: code)
                        }
                    }
                }
                let v = Array(value(a, link: id).prefix(min(mtu - 4, 253)))
                if let first = list.first, first.value.count != v.count { break }
                if 2 + (list.count + 1) * (2 + v.count) > mtu { break }
                list.append(ATTHandleValue(handle: a.handle, value: v))
            }
            return list.isEmpty ? error(.attributeNotFound, range.start) : .answer(.readByTypeResponse(list))

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
            return .answer(.findInformationResponse(format: format, entries: entries))

        case .readRequest(let handle):
            return read([handle], request: .readRequest, link: id) { values in .readResponse(value: Array(values[0].prefix(mtu - 1))) }

        case .readBlobRequest(let handle, let offset):
            return read([handle], request: .readBlobRequest, offset: Int(offset), link: id) { values in
                guard Int(offset) <= values[0].count else { return .errorResponse(request: .readBlobRequest, handle: handle, error: .invalidOffset) }
                return .readBlobResponse(value: Array(values[0][Int(offset)...].prefix(mtu - 1)))
            }

        case .readMultipleRequest(let handles):
            guard handles.count >= 2 else { return error(.invalidPDU, 0) }
            return read(handles, request: .readMultipleRequest, link: id) { values in .readMultipleResponse(values: Array(values.joined().prefix(mtu - 1))) }

        case .readMultipleVariableRequest(let handles):
            guard handles.count >= 2 else { return error(.invalidPDU, 0) }
            return read(handles, request: .readMultipleVariableRequest, link: id) { values in
                var list: [ATTLengthValue] = []
                var room = mtu - 1
                for v in values {
                    guard room >= 2 else { break }
                    let part = Array(v.prefix(room - 2))
                    list.append(ATTLengthValue(length: UInt16(clamping: v.count), value: part))
                    room -= 2 + part.count
                }
                return .readMultipleVariableResponse(list)
            }

        case .writeRequest(let handle, let value):
            return write(value, handle: handle, link: id, request: .writeRequest) { .writeResponse }

        case .writeCommand(let handle, let value):
            if case .deferred(let work) = write(value, handle: handle, link: id, request: .writeCommand, answer: { nil }) {
                runCommand(link: id) { _ = await work() }
            }
            return .none

        case .signedWriteCommand(let handle, let value, let signature):
            signedWrite(value, handle: handle, signature: signature, message: Array(bytes.dropLast(12)), link: id)
            return .none

        case .prepareWriteRequest(let handle, let offset, let value):
            guard let i = table.index(of: handle) else { return error(.invalidHandle, handle) }
            if let code = writeDenied(table.attributes[i], link: id) { return error(code, handle) }
            guard let state = links[id], state.prepareQueue.count < prepareQueueLimit,
                  state.preparedBytes + value.count <= prepareQueueBytes else { return error(.prepareQueueFull, handle) }
            links[id]?.prepareQueue.append((handle, offset, value))
            links[id]?.preparedBytes += value.count
            return .answer(.prepareWriteResponse(handle: handle, offset: offset, value: value))

        case .executeWriteRequest(let flags):
            let queued = links[id]?.prepareQueue ?? []
            links[id]?.prepareQueue = []
            links[id]?.preparedBytes = 0
            guard flags == .write else { return .answer(.executeWriteResponse) }
            return executeWrite(queued, link: id)

        case .handleValueConfirmation, .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification:
            return .none

        default:
            return pdu.opcode.isCommand ? .none : error(.requestNotSupported, 0)
        }
    }

    /// What a change-unaware client with robust caching gets (Part G, 2.5.2.1).
    enum Awareness {
        case handle
        case ignore
        case refuse(ATTPDU)
    }

    /// Database Out Of Sync for a change-unaware client with robust caching, its commands
    /// ignored; every other PDU is handled.
    func awareness(_ pdu: ATTPDU, link id: ObjectIdentifier) -> Awareness {
        guard let state = links[id], state.clientFeatures & 0x01 != 0, !state.changeAware else { return .handle }
        if pdu.opcode.isCommand { dropped += 1; return .ignore }
        if case .readByTypeRequest(_, let type) = pdu, type == GATTAttributeType.databaseHash { return .handle }
        if pdu.opcode.kind != .request { return .handle }
        if state.outOfSyncSent {
            // The request after the error: the client knows now.
            links[id]?.changeAware = true
            rememberBondState(id)
            return .handle
        }
        links[id]?.outOfSyncSent = true
        return .refuse(.errorResponse(request: pdu.opcode, handle: 0, error: .databaseOutOfSync))
    }

    /// Reads `handles` (permissions first, then values, stored or served) and composes the answer.
    private func read(_ handles: [UInt16], request: ATTOpcode, offset: Int = 0, link id: ObjectIdentifier,
                      compose: @escaping @Sendable ([[UInt8]]) -> ATTPDU) -> Answer {
        var sources: [Result<[UInt8], ReadSource>] = []
        for h in handles {
            guard let i = table.index(of: h) else { return .answer(.errorResponse(request: request, handle: h, error: .invalidHandle)) }
            let a = table.attributes[i]
            if let code = readDenied(a, link: id) { return .answer(.errorResponse(request: request, handle: h, error: code)) }
            if let (handler, req) = readHandler(a, link: id, offset: offset) { sources.append(.failure(ReadSource(handler: handler, request: req))) }
            else { sources.append(.success(value(a, link: id))) }
        }
        if sources.allSatisfy({ if case .success = $0 { return true } else { return false } }) {
            let values = sources.map { (try? $0.get()) ?? [] }
            reportReads(handles, values: values, offset: offset, link: id)
            return .answer(compose(values))
        }
        let fixed = sources
        return .deferred {
            var values: [[UInt8]] = []
            for s in fixed {
                switch s {
                case .success(let v): values.append(v)
                case .failure(let source):
                    switch await source.handler(source.request) {
                    case .value(let v): values.append(v)
                    case .refused(let code): return .errorResponse(request: request, handle: source.request.handle, error: code)
                    }
                }
            }
            let read = values
            self.queue.async { self.reportReads(handles, values: read, offset: offset, link: id) }
            return compose(values)
        }
    }

    /// Tells the activity subscribers of the values a read request read (on the queue).
    func reportReads(_ handles: [UInt16], values: [[UInt8]], offset: Int, link id: ObjectIdentifier) {
        guard !activityObservers.isEmpty, let peer = links[id]?.link.centralDescription else { return }
        for (h, v) in zip(handles, values) {
            // A Read Blob past the end is refused (Invalid Offset), not read.
            guard offset <= v.count, let i = table.index(of: h) else { continue }
            report(.read(peer: peer, handle: h, uuid: table.attributes[i].type, offset: offset, value: v))
        }
    }

    /// A value served by a handler, as `read` keeps it.
    struct ReadSource: Error {
        let handler: GATTReadHandler
        let request: GATTRequest
    }

    /// The handler that serves `a`'s value, with the request it gets.
    func readHandler(_ a: ServerAttribute, link id: ObjectIdentifier, offset: Int) -> (GATTReadHandler, GATTRequest)? {
        guard case .value(let c) = a.kind, let handler = table.characteristics[c].onRead else { return nil }
        return (handler, request(a, link: id, offset: offset))
    }

    func request(_ a: ServerAttribute, link id: ObjectIdentifier, offset: Int) -> GATTRequest {
        let link = links[id]?.link
        return GATTRequest(peer: link?.centralDescription ?? "", bondedPeer: link.flatMap(bondedPeer), handle: a.handle,
                           uuid: a.type, offset: offset, security: security(id))
    }

    /// The stored value a link reads (its own value for a CCCD and Client Supported Features).
    func value(_ a: ServerAttribute, link id: ObjectIdentifier) -> [UInt8] {
        if case .cccd = a.kind {
            let v = links[clientOf(id)]?.cccd[a.handle] ?? 0
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        }
        if a.handle == table.clientSupportedFeaturesHandle { return [links[clientOf(id)]?.clientFeatures ?? 0] }
        return a.value
    }

    // MARK: Writes

    /// Checks a write, then stores it (at once, or after its handler accepted it) and answers.
    func write(_ value: [UInt8], handle: UInt16, link id: ObjectIdentifier, request: ATTOpcode,
               answer: @escaping @Sendable () -> ATTPDU?) -> Answer {
        func refuse(_ code: ATTErrorCode) -> Answer { .answer(.errorResponse(request: request, handle: handle, error: code)) }
        guard let i = table.index(of: handle) else { return refuse(.invalidHandle) }
        let a = table.attributes[i]
        if let code = writeDenied(a, link: id) { return refuse(code) }
        if let code = checkWrite(value, to: a) { return refuse(code) }
        guard case .value(let c) = a.kind, let handler = table.characteristics[c].onWrite else {
            if let code = store(value, handle: handle, link: id) { return refuse(code) }
            return answer().map { .answer($0) } ?? .none
        }
        let req = self.request(a, link: id, offset: 0)
        return .deferred {
            if let code = await handler(req, value) { return .errorResponse(request: request, handle: handle, error: code) }
            let stored = await self.onQueue { self.store(value, handle: handle, link: id) }
            if let code = stored { return .errorResponse(request: request, handle: handle, error: code) }
            return answer()
        }
    }

    /// Why `value` cannot be written to `a` whatever the link (length, accepted values, CCCD bits).
    func checkWrite(_ value: [UInt8], to a: ServerAttribute) -> ATTErrorCode? {
        switch a.kind {
        case .cccd(_, let properties):
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let v = UInt16(value[0]) | UInt16(value[1]) << 8
            if v & 0x0001 != 0 && !properties.contains(.notify) || v & 0x0002 != 0 && !properties.contains(.indicate) || v > 3 {
                return .cccdImproperlyConfigured
            }
        case .value(let c):
            let rules = table.characteristics[c]
            guard value.count <= rules.maximumLength else { return .invalidAttributeValueLength }
            if a.handle == table.clientSupportedFeaturesHandle, value.count != 1 { return .invalidAttributeValueLength }
            if let accepted = rules.acceptedWrites, !accepted.contains(value) { return rules.rejectWith }
        default:
            break
        }
        return nil
    }

    /// Stores a checked write (on the queue): a CCCD and Client Supported Features per link
    /// (and per bond), any other value in the table.
    func store(_ value: [UInt8], handle: UInt16, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard let i = table.index(of: handle), links[id] != nil else { return .unlikelyError }
        let client = clientOf(id)
        switch table.attributes[i].kind {
        case .cccd:
            links[client]?.cccd[handle] = UInt16(value[0]) | UInt16(value[1]) << 8
        case .value where handle == table.clientSupportedFeaturesHandle:
            let old = links[client]?.clientFeatures ?? 0
            // A feature once enabled cannot be disabled (Part G, 7.2).
            guard value[0] & old == old else { return .valueNotAllowed }
            links[client]?.clientFeatures = value[0] & 0x07
            // The table keeps the last client's, for `value(of:)`; reads answer each client its own.
            table.attributes[i].value = [value[0] & 0x07]
        default:
            table.attributes[i].value = value
        }
        rememberBondState(client)
        reportStore(value, handle: handle, link: id)
        hooks?.applied(handle: handle, value: value)
        return nil
    }

    /// Copies a bonded link's CCCDs, features and awareness into its bond's record.
    func rememberBondState(_ id: ObjectIdentifier) {
        guard let state = links[id], let peer = bondedPeer(state.link) else { return }
        bonds[peer, default: BondState()].cccd = state.cccd
        bonds[peer]?.clientFeatures = state.clientFeatures
        bonds[peer]?.changeAware = state.changeAware
        saveClientState(of: peer, link: state.link)
    }

    /// Execute Write Request (Part F, 3.4.6.3): assembles each handle's queued parts, checks
    /// them all, then writes them in the order first queued.
    func executeWrite(_ queued: [(handle: UInt16, offset: UInt16, value: [UInt8])], link id: ObjectIdentifier) -> Answer {
        func refuse(_ code: ATTErrorCode, _ h: UInt16) -> Answer { .answer(.errorResponse(request: .executeWriteRequest, handle: h, error: code)) }
        var assembled: [UInt16: [UInt8]] = [:]
        var order: [UInt16] = []
        for q in queued {
            guard let i = table.index(of: q.handle) else { return refuse(.invalidHandle, q.handle) }
            var v = assembled[q.handle] ?? table.attributes[i].value
            if assembled[q.handle] == nil { order.append(q.handle) }
            guard Int(q.offset) <= v.count else { return refuse(.invalidOffset, q.handle) }
            v = Array(v.prefix(Int(q.offset))) + q.value
            assembled[q.handle] = v
        }
        var handlers: [(GATTWriteHandler, GATTRequest, [UInt8])] = []
        for h in order {
            guard let v = assembled[h], let i = table.index(of: h) else { continue }
            let a = table.attributes[i]
            if let code = checkWrite(v, to: a) { return refuse(code, h) }
            if case .value(let c) = a.kind, let handler = table.characteristics[c].onWrite { handlers.append((handler, request(a, link: id, offset: 0), v)) }
        }
        let writes = order.compactMap { h in assembled[h].map { (h, $0) } }
        guard !handlers.isEmpty else {
            for (h, v) in writes { if let code = store(v, handle: h, link: id) { return refuse(code, h) } }
            return .answer(.executeWriteResponse)
        }
        let pending = handlers
        return .deferred {
            for (handler, req, v) in pending {
                if let code = await handler(req, v) { return .errorResponse(request: .executeWriteRequest, handle: req.handle, error: code) }
            }
            let failed: (UInt16, ATTErrorCode)? = await self.onQueue {
                for (h, v) in writes { if let code = self.store(v, handle: h, link: id) { return (h, code) } }
                return nil
            }
            if let (h, code) = failed { return .errorResponse(request: .executeWriteRequest, handle: h, error: code) }
            return .executeWriteResponse
        }
    }

    /// Signed Write Command (Part F, 3.4.5.4): applied only from a bonded peer whose signature
    /// verifies with its CSRK and whose SignCounter is above every one used before, on an
    /// encrypted link or not (`ATTServerLinkBond.signingPeer`).
    func signedWrite(_ value: [UInt8], handle: UInt16, signature: ATTSignature, message: [UInt8], link id: ObjectIdentifier) {
        guard let state = links[id], let peer = (state.link as? any ATTServerLinkBond)?.signingPeer, let verifier = signedWrites,
              let i = table.index(of: handle), case .value(let c) = table.attributes[i].kind,
              table.characteristics[c].properties.contains(.authenticatedSignedWrites),
              checkWrite(value, to: table.attributes[i]) == nil else { dropped += 1; return }
        if let last = bonds[peer]?.signCounter, signature.signCounter <= last { dropped += 1; return }
        runCommand(link: id) {
            let valid = await verifier.verify(peer: peer, message: message, signature: signature)
            await self.onQueue {
                defer { self.hooks?.changed(self) }
                guard valid, self.links[id] != nil else { self.dropped += 1; return }
                if let last = self.bonds[peer]?.signCounter, signature.signCounter <= last { self.dropped += 1; return }
                self.bonds[peer, default: BondState()].signCounter = signature.signCounter
                if case .deferred(let work) = self.write(value, handle: handle, link: id, request: .signedWriteCommand, answer: { nil }) {
                    self.runCommand(link: id) { _ = await work() }
                }
            }
        }
    }
}
