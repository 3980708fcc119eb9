import BLEWire

/// The bytes of one peer's file in a persistent `GATTCache` (docs/gatt-cache.md has the
/// layout). All numbers little-endian; a UUID is its width (2, 4 or 16) then its wire bytes.
///
///     "BLEGATTC" | version 1 | peer address (6) | peer address type (1) | Database Hash (16)
///     services:        count u16, each: UUID, handle u16, end handle u16, primary u8
///     characteristics: group count u16, each: service handle u16, count u16,
///                      each: UUID, declaration handle u16, value handle u16, properties u8, end handle u16
///     descriptors:     group count u16, each: value handle u16, count u16, each: UUID, handle u16
///     included:        group count u16, each: service handle u16, count u16,
///                      each: declaration handle u16, UUID, handle u16, end handle u16
///     CRC-32 (IEEE 802.3) of everything before it, u32
///
/// Decoding is total: a file cut short, flipped bits, handles out of order or outside their
/// service, a different peer or version all end in `DecodeError`, never a trap.
///
///     let bytes = GATTCacheFile.encode(snapshot, peer: peer)
///     let back = try GATTCacheFile.decode(bytes, peer: peer)
enum GATTCacheFile {
    static let magic: [UInt8] = Array("BLEGATTC".utf8)
    static let version: UInt8 = 1
    /// The largest file written or read: far beyond a real database (a full handle space of
    /// 16-bit characteristics is about 330 KiB), and what one load may allocate.
    static let maximumSize = 512 * 1024

    /// The file of `snapshot`, which must hold the services and a 16-octet Database Hash.
    static func encode(_ snapshot: GATTDatabaseSnapshot, peer: LEAddress) -> [UInt8] {
        var out = magic
        out.appendLE(version)
        out.appendLE(peer.address)
        out.appendLE(peer.type.rawValue)
        out += snapshot.databaseHash ?? []
        let services = snapshot.services ?? []
        out.appendLE(UInt16(truncatingIfNeeded: services.count))
        for s in services { appendService(s, to: &out) }
        let characteristics = snapshot.characteristics.sorted { $0.key < $1.key }
        out.appendLE(UInt16(truncatingIfNeeded: characteristics.count))
        for (service, list) in characteristics {
            out.appendLE(service)
            out.appendLE(UInt16(truncatingIfNeeded: list.count))
            for c in list {
                appendUUID(c.uuid, to: &out)
                out.appendLE(c.handle); out.appendLE(c.valueHandle); out.appendLE(c.properties.rawValue); out.appendLE(c.endHandle)
            }
        }
        let descriptors = snapshot.descriptors.sorted { $0.key < $1.key }
        out.appendLE(UInt16(truncatingIfNeeded: descriptors.count))
        for (value, list) in descriptors {
            out.appendLE(value)
            out.appendLE(UInt16(truncatingIfNeeded: list.count))
            for d in list { appendUUID(d.uuid, to: &out); out.appendLE(d.handle) }
        }
        let included = snapshot.includedServices.sorted { $0.key < $1.key }
        out.appendLE(UInt16(truncatingIfNeeded: included.count))
        for (service, list) in included {
            out.appendLE(service)
            out.appendLE(UInt16(truncatingIfNeeded: list.count))
            for i in list { out.appendLE(i.declarationHandle); appendService(i.service, to: &out, withPrimary: false) }
        }
        out.appendLE(CRC32.checksum(out))
        return out
    }

    /// The snapshot in `bytes`, written for `peer` by this version.
    static func decode(_ bytes: [UInt8], peer: LEAddress) throws(DecodeError) -> GATTDatabaseSnapshot {
        guard bytes.count <= maximumSize else { throw .malformed(what: what, detail: "\(bytes.count) bytes, more than \(maximumSize)") }
        guard bytes.count >= magic.count + 1, Array(bytes.prefix(magic.count)) == magic else {
            throw .malformed(what: what, detail: "not a GATT cache file (no BLEGATTC header)")
        }
        let stored = bytes[magic.count]
        guard stored == version else { throw .invalidValue(what: what, field: "version (this build reads 1)", value: Int(stored)) }
        guard bytes.count >= magic.count + 5 else { throw .truncated(what: what, needed: magic.count + 5 - bytes.count) }
        let body = bytes.count - 4
        var crc = ByteReader(bytes, range: body..<bytes.count, context: "GATT cache file")
        let expected = try crc.u32()
        guard CRC32.checksum(bytes[..<body]) == expected else { throw .malformed(what: what, detail: "CRC-32 mismatch: the file is damaged") }

        var r = ByteReader(bytes, range: magic.count + 1..<body, context: "GATT cache file")
        let address = try r.address()
        let typeByte = try r.u8()
        guard let type = LEAddressType(rawValue: typeByte) else { throw .invalidValue(what: what, field: "peer address type", value: Int(typeByte)) }
        guard LEAddress(address, type: type) == peer else { throw .malformed(what: what, detail: "written for \(address) (\(type)), not \(peer.address) (\(peer.type))") }
        var snapshot = GATTDatabaseSnapshot()
        snapshot.databaseHash = try r.bytes(16)

        var services: [GATTService] = []
        for _ in 0..<(try r.u16()) {
            let s = try readService(&r)
            if let last = services.last, s.handle <= last.endHandle { throw .malformed(what: what, detail: "service at \(s.handle.hex) overlaps or precedes the one at \(last.handle.hex)") }
            services.append(s)
        }
        snapshot.services = services
        let byHandle = Dictionary(services.map { ($0.handle, $0) }, uniquingKeysWith: { a, _ in a })

        var valueRanges: [UInt16: UInt16] = [:]
        for _ in 0..<(try r.u16()) {
            let key = try r.u16()
            guard let service = byHandle[key], snapshot.characteristics[key] == nil else { throw .malformed(what: what, detail: "characteristics of an unknown or repeated service \(key.hex)") }
            var list: [GATTCharacteristic] = []
            for _ in 0..<(try r.u16()) {
                let uuid = try readUUID(&r, what: what)
                let handle = try r.u16(), valueHandle = try r.u16(), properties = try r.u8(), end = try r.u16()
                guard handle > service.handle, handle < valueHandle, valueHandle <= end, end <= service.endHandle,
                      handle > (list.last?.endHandle ?? service.handle) else {
                    throw .malformed(what: what, detail: "characteristic at \(handle.hex) does not fit service \(service.handle.hex)-\(service.endHandle.hex)")
                }
                list.append(GATTCharacteristic(uuid: uuid, handle: handle, valueHandle: valueHandle,
                                               properties: GATTCharacteristicProperties(rawValue: properties), endHandle: end, serviceUUID: service.uuid))
                valueRanges[valueHandle] = end
            }
            snapshot.characteristics[key] = list
        }

        for _ in 0..<(try r.u16()) {
            let key = try r.u16()
            guard let end = valueRanges[key], snapshot.descriptors[key] == nil else { throw .malformed(what: what, detail: "descriptors of an unknown or repeated characteristic value \(key.hex)") }
            var list: [GATTDescriptor] = []
            for _ in 0..<(try r.u16()) {
                let uuid = try readUUID(&r, what: what)
                let handle = try r.u16()
                guard handle > (list.last?.handle ?? key), handle <= end else { throw .malformed(what: what, detail: "descriptor at \(handle.hex) is outside \(key.hex)-\(end.hex)") }
                list.append(GATTDescriptor(uuid: uuid, handle: handle))
            }
            snapshot.descriptors[key] = list
        }

        for _ in 0..<(try r.u16()) {
            let key = try r.u16()
            guard let service = byHandle[key], snapshot.includedServices[key] == nil else { throw .malformed(what: what, detail: "included services of an unknown or repeated service \(key.hex)") }
            var list: [GATTIncludedService] = []
            for _ in 0..<(try r.u16()) {
                let declaration = try r.u16()
                let included = try readService(&r, primary: false)
                guard declaration > service.handle, declaration <= service.endHandle else { throw .malformed(what: what, detail: "include declaration \(declaration.hex) is outside service \(key.hex)") }
                list.append(GATTIncludedService(declarationHandle: declaration, service: included))
            }
            snapshot.includedServices[key] = list
        }
        try r.expectEnd()
        return snapshot
    }

    private static let what = "GATT cache file"

    /// A UUID as the cache and restoration files hold it: its width (2, 4 or 16), then its wire octets.
    static func appendUUID(_ uuid: BluetoothUUID, to out: inout [UInt8]) {
        out.appendLE(UInt8(uuid.width))
        out += uuid.littleEndianBytes
    }

    private static func appendService(_ s: GATTService, to out: inout [UInt8], withPrimary: Bool = true) {
        appendUUID(s.uuid, to: &out)
        out.appendLE(s.handle); out.appendLE(s.endHandle)
        if withPrimary { out.appendLE(UInt8(s.isPrimary ? 1 : 0)) }
    }

    static func readUUID(_ r: inout ByteReader, what: String) throws(DecodeError) -> BluetoothUUID {
        let width = try r.u8()
        guard width == 2 || width == 4 || width == 16 else { throw .invalidValue(what: what, field: "UUID width", value: Int(width)) }
        guard let uuid = BluetoothUUID(littleEndian: try r.bytes(Int(width))) else { throw .invalidValue(what: what, field: "UUID width", value: Int(width)) }
        return uuid
    }

    /// A service; an included one carries no primary flag (discovery records it as not
    /// primary, `GATTProcedures.findIncludedServices`).
    private static func readService(_ r: inout ByteReader, primary: Bool = true) throws(DecodeError) -> GATTService {
        let uuid = try readUUID(&r, what: what)
        let handle = try r.u16(), end = try r.u16()
        var isPrimary = false
        if primary {
            let flag = try r.u8()
            guard flag <= 1 else { throw .invalidValue(what: what, field: "primary flag", value: Int(flag)) }
            isPrimary = flag == 1
        }
        guard handle >= 1, handle <= end else { throw .malformed(what: what, detail: "service range \(handle.hex)-\(end.hex) is not one") }
        return GATTService(uuid: uuid, handle: handle, endHandle: end, isPrimary: isPrimary)
    }
}

/// CRC-32 as IEEE 802.3 and zlib compute it (reflected polynomial 0xEDB88320, initial and
/// final XOR 0xFFFFFFFF); "123456789" checks to 0xCBF43926.
///
///     CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926
enum CRC32 {
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
