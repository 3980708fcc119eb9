import BLEWire
import ATT
extension GATTProcedures {
    /// The longest attribute value (Vol 3, Part F, 3.2.9).
    public static let maximumAttributeValueLength = 512

    // MARK: Reading (4.8)

    /// Read Characteristic Value (4.8.1): one Read Request.
    public func read(handle: UInt16) async throws(GATTProcedureError) -> [UInt8] {
        guard case .readResponse(let value) = try await request(.readRequest(handle: handle)) else {
            throw .invalidResponse("expected a Read Response")
        }
        return value
    }

    /// Read Long Characteristic Value (4.8.3): a Read, then Read Blob Requests while each
    /// part fills the PDU (ATT_MTU - 1 octets). Attribute Not Long after the first part ends it.
    public func readLong(handle: UInt16) async throws(GATTProcedureError) -> [UInt8] {
        let mtu = Int(await bearer.mtu)
        var run = run(.readLong(handle: handle), nil)
        guard case .readResponse(var value) = try await run.request(.readRequest(handle: handle)) else {
            throw .invalidResponse("expected a Read Response")
        }
        var part = value.count
        while part == mtu - 1 {
            run.progress.found = value.count
            guard value.count <= 0xFFFF else { throw .invalidResponse("value of handle \(handle.hex) exceeds 65535 bytes") }
            let rsp: ATTPDU
            do throws(ATTError) { rsp = try await run.attRequest(.readBlobRequest(handle: handle, offset: UInt16(value.count))) } catch {
                if case .errorResponse(let code, _, _) = error, code == .attributeNotLong || code == .invalidOffset { break }
                throw run.wrap(error)
            }
            guard case .readBlobResponse(let chunk) = rsp else { throw .invalidResponse("expected a Read Blob Response") }
            value += chunk
            part = chunk.count
        }
        return value
    }

    /// Read Using Characteristic UUID (4.8.2): one Read By Type Request over `range`; the
    /// attributes of that type the response holds (empty on Attribute Not Found).
    public func read(type: BluetoothUUID, in range: ATTHandleRange = .all) async throws(GATTProcedureError) -> [ATTHandleValue] {
        guard let rsp = try await requestUnlessNotFound(.readByTypeRequest(range: range, type: type)) else { return [] }
        guard case .readByTypeResponse(let list) = rsp else { throw .invalidResponse("expected a Read By Type Response") }
        var previous: UInt16 = 0
        for e in list {
            guard e.handle > previous, e.handle >= range.start, e.handle <= range.end else {
                throw .invalidResponse("attribute \(e.handle.hex) is outside \(range) or out of order")
            }
            previous = e.handle
        }
        return list
    }

    /// Read Multiple Characteristic Values (4.8.4): the values concatenated.
    public func readMultiple(handles: [UInt16]) async throws(GATTProcedureError) -> [UInt8] {
        guard case .readMultipleResponse(let values) = try await request(.readMultipleRequest(handles: handles)) else {
            throw .invalidResponse("expected a Read Multiple Response")
        }
        return values
    }

    /// Read Multiple Variable Length Characteristic Values (4.8.5): one value per handle
    /// (the last may be cut at ATT_MTU - 1 octets; see `ATTLengthValue.isTruncated`).
    public func readMultipleVariable(handles: [UInt16]) async throws(GATTProcedureError) -> [ATTLengthValue] {
        guard case .readMultipleVariableResponse(let list) = try await request(.readMultipleVariableRequest(handles: handles)) else {
            throw .invalidResponse("expected a Read Multiple Variable Response")
        }
        guard list.count <= handles.count else {
            throw .invalidResponse("Read Multiple Variable Response holds \(list.count) values for \(handles.count) handles")
        }
        return list
    }

    // MARK: Writing (4.9)

    /// Write Characteristic Value (4.9.3): one Write Request.
    public func write(handle: UInt16, value: [UInt8]) async throws(GATTProcedureError) {
        guard case .writeResponse = try await request(.writeRequest(handle: handle, value: value)) else {
            throw .invalidResponse("expected a Write Response")
        }
    }

    /// Write Without Response (4.9.1): a Write Command, returning once the channel took it
    /// (the channel's back-pressure flow-controls a burst; nothing is dropped).
    public func writeWithoutResponse(handle: UInt16, value: [UInt8]) async throws(GATTProcedureError) {
        do { try await bearer.send(command: .writeCommand(handle: handle, value: value)) } catch { throw .att(error) }
    }

    /// Signed Write Without Response (4.9.2): a Signed Write Command with its Authentication
    /// Signature (Vol 3, Part F, 3.4.5.4).
    public func signedWriteWithoutResponse(handle: UInt16, value: [UInt8], signature: ATTSignature) async throws(GATTProcedureError) {
        do { try await bearer.send(command: .signedWriteCommand(handle: handle, value: value, signature: signature)) } catch { throw .att(error) }
    }

    /// Write Long Characteristic Values (4.9.4): Prepare Write Requests of ATT_MTU - 5 octets,
    /// each echo checked, then Execute Write.
    public func writeLong(handle: UInt16, value: [UInt8], offset: UInt16 = 0) async throws(GATTProcedureError) {
        try await reliableWrite([(handle, value, offset)])
    }

    /// Reliable Writes (4.9.5): every part of every value prepared and its echo checked, then
    /// one Execute Write. A mismatching echo or a failed Prepare Write (Prepare Queue Full...)
    /// sends Execute Write with flags 0x00 (cancel) before failing.
    public func reliableWrite(_ writes: [(handle: UInt16, value: [UInt8], offset: UInt16)]) async throws(GATTProcedureError) {
        let chunk = max(1, Int(await bearer.mtu) - 5)
        var run = run(.writeLong(handles: writes.map(\.handle)), nil)
        for w in writes {
            guard Int(w.offset) + w.value.count <= 0xFFFF + 1 else {
                throw .invalidResponse("a \(w.value.count)-byte value at offset \(w.offset) does not fit the 16-bit offset field")
            }
            var start = 0
            repeat {
                let end = min(start + chunk, w.value.count)
                let part = Array(w.value[start..<end])
                let offset = w.offset &+ UInt16(truncatingIfNeeded: start)
                let rsp: ATTPDU
                do throws(ATTError) { rsp = try await run.attRequest(.prepareWriteRequest(handle: w.handle, offset: offset, value: part)) } catch {
                    if case .deadlinePassed = error {
                        // Queued behind the unanswered Prepare Write; the procedure ends now.
                        // A task of the link: `Central.close()` ends it.
                        let bearer = bearer
                        await bearer.runOwnedTask { _ = try? await bearer.request(.executeWriteRequest(.cancel)) }
                    } else {
                        await cancelPreparedWrites()
                    }
                    throw run.wrap(error)
                }
                guard case .prepareWriteResponse(let h, let o, let v) = rsp, h == w.handle, o == offset, v == part else {
                    await cancelPreparedWrites()
                    if case .prepareWriteResponse(let h, let o, let v) = rsp {
                        throw .invalidResponse("Prepare Write Response echoed handle \(h.hex) offset \(o) with \(v.count) bytes for handle \(w.handle.hex) offset \(offset) with \(part.count) bytes\(h == w.handle && o == offset ? " (value differs)" : ""); the queued writes were cancelled")
                    }
                    throw .invalidResponse("expected a Prepare Write Response")
                }
                start = end
                run.progress.found += part.count
            } while start < w.value.count
        }
        guard case .executeWriteResponse = try await run.request(.executeWriteRequest(.write)) else {
            throw .invalidResponse("expected an Execute Write Response")
        }
    }

    /// Execute Write with flags 0x00: drops whatever the server queued. Failures are moot
    /// (the procedure already failed).
    func cancelPreparedWrites() async {
        _ = try? await bearer.request(.executeWriteRequest(.cancel))
    }

    // MARK: Configuration (4.12.3)

    /// Writes a Client Characteristic Configuration descriptor: bit 0 notifications, bit 1
    /// indications (Vol 3, Part G, 3.3.3.3).
    public func writeClientConfiguration(handle: UInt16, value: UInt16) async throws(GATTProcedureError) {
        try await write(handle: handle, value: [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)])
    }
}
