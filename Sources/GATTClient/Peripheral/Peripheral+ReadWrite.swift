/// How a value is written.
public enum GATTWriteType: Sendable, Hashable {
    /// Write Request (long values use Prepare/Execute Write).
    case withResponse
    /// Write Command, flow-controlled by the link (never dropped).
    case withoutResponse
}

extension Peripheral {
    /// Reads a characteristic's value; values that fill the PDU are read to the end with
    /// Read Blob (Read Long Characteristic Value).
    ///
    ///     let level = try await peripheral.read(batteryLevel)
    public func read(_ characteristic: CharacteristicIdentifier) async throws(GATTError) -> [UInt8] {
        let c = try await resolve(characteristic)
        return try await readValue(handle: c.valueHandle, target: .attribute(c.uuid, handle: c.valueHandle))
    }

    /// Reads and decodes a characteristic's value.
    ///
    ///     let m = try await peripheral.read(location, as: BodySensorLocation.self)
    public func read<T: GATTDecodable>(_ characteristic: CharacteristicIdentifier, as type: T.Type) async throws(GATTError) -> T {
        let bytes = try await read(characteristic)
        do { return try T(gattValue: bytes) } catch {
            let handle = try await resolve(characteristic).valueHandle
            throw .invalidValue(error, target: .attribute(characteristic.uuid, handle: handle), peer: peerAddress)
        }
    }

    /// Reads several characteristics in one Read Multiple Variable Length request.
    public func read(_ characteristics: [CharacteristicIdentifier]) async throws(GATTError) -> [[UInt8]] {
        var handles: [UInt16] = []
        for c in characteristics { handles.append(try await resolve(c).valueHandle) }
        let target = GATTTarget.attributes(characteristics.map(\.uuid), handles: handles)
        return try await perform(.reading, target) { p async throws(GATTProcedureError) in
            try await p.readMultipleVariable(handles: handles).map(\.value)
        }
    }

    /// Reads a descriptor's value (long values to the end).
    public func readDescriptor(_ descriptor: DescriptorIdentifier) async throws(GATTError) -> [UInt8] {
        let d = try await resolve(descriptor)
        return try await readValue(handle: d.handle, target: .attribute(d.uuid, handle: d.handle))
    }

    /// Writes a descriptor's value with a Write Request.
    public func writeDescriptor(_ value: some GATTEncodable, to descriptor: DescriptorIdentifier) async throws(GATTError) {
        let d = try await resolve(descriptor)
        try await writeValue(value.gattValue, handle: d.handle, type: .withResponse, target: .attribute(d.uuid, handle: d.handle))
    }

    /// Writes a characteristic's value. With `.withResponse` a value longer than
    /// ATT_MTU - 3 goes out as a long write; `.withoutResponse` waits for the link to take it.
    ///
    ///     try await peripheral.write([0x01], to: controlPoint)
    public func write(_ value: some GATTEncodable, to characteristic: CharacteristicIdentifier, type: GATTWriteType = .withResponse) async throws(GATTError) {
        let c = try await resolve(characteristic)
        let bytes = value.gattValue
        try await writeValue(bytes, handle: c.valueHandle, type: type, target: .attribute(c.uuid, handle: c.valueHandle))
    }

    /// Writes with Prepare Write / Execute Write whatever the length (Write Long
    /// Characteristic Values), starting at `offset`.
    public func writeLong(_ value: some GATTEncodable, to characteristic: CharacteristicIdentifier, offset: UInt16 = 0) async throws(GATTError) {
        let c = try await resolve(characteristic)
        let bytes = value.gattValue
        try await perform(.writing, .attribute(c.uuid, handle: c.valueHandle)) { p async throws(GATTProcedureError) in
            try await p.writeLong(handle: c.valueHandle, value: bytes, offset: offset)
        }
    }

    /// Writes several values atomically (Reliable Writes): all prepared and checked, then one
    /// Execute Write; a bad echo cancels them all.
    ///
    ///     try await peripheral.reliableWrite([(a, [1, 2]), (b, [3])])
    public func reliableWrite(_ writes: [(characteristic: CharacteristicIdentifier, value: [UInt8])]) async throws(GATTError) {
        var resolved: [(handle: UInt16, value: [UInt8], offset: UInt16)] = []
        for w in writes { resolved.append((try await resolve(w.characteristic).valueHandle, w.value, 0)) }
        let target = GATTTarget.attributes(writes.map(\.characteristic.uuid), handles: resolved.map(\.handle))
        try await perform(.reliablyWriting, target) { p async throws(GATTProcedureError) in try await p.reliableWrite(resolved) }
    }

    /// The longest value one write of `type` carries: ATT_MTU - 3 without response (the
    /// smallest ATT_MTU of the bearers in `bearerPool`), 512 (the longest attribute value)
    /// with response, which uses a long write when needed.
    public func maximumWriteValueLength(for type: GATTWriteType) async throws(GATTError) -> Int {
        _ = try await procedures()
        var mtu = Int.max
        for b in bearerPool.bearers { mtu = min(mtu, Int(await b.mtu)) }
        return type == .withoutResponse ? mtu - 3 : GATTProcedures.maximumAttributeValueLength
    }

    // MARK: By handle

    func readValue(handle: UInt16, target: GATTTarget) async throws(GATTError) -> [UInt8] {
        try await perform(.reading, target) { p async throws(GATTProcedureError) in try await p.readLong(handle: handle) }
    }

    func writeValue(_ value: [UInt8], handle: UInt16, type: GATTWriteType, target: GATTTarget) async throws(GATTError) {
        let p = try await leaseProcedures()
        defer { release(p) }
        let max = Int(await p.bearer.mtu) - 3
        if type == .withoutResponse, value.count > max {
            throw .valueTooLong(length: value.count, maximum: max, operation: .writingWithoutResponse, target: target)
        }
        try await perform(.writing, target, on: p) { p async throws(GATTProcedureError) in
            switch type {
            case .withResponse where value.count > max:
                try await p.writeLong(handle: handle, value: value)
            case .withResponse:
                try await p.write(handle: handle, value: value)
            case .withoutResponse:
                try await p.writeWithoutResponse(handle: handle, value: value)
            }
        }
    }
}
