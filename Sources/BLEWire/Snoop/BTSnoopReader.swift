/// Reads a btsnoop capture (datalink 1002 = H4, or 2001 = Linux monitor) into records.
/// Total: a damaged header is a typed error, a damaged record ends the file with an error
/// value in `trailingError` and keeps every record before it; packets whose bytes do not
/// decode are kept in `undecodable` with their record number, never dropped silently.
///
///     let capture = try BTSnoopReader(bytes: fileBytes)
///     for record in capture.records { print(record.direction, record.packet.type) }
public struct BTSnoopReader: Sendable {
    public let datalink: BTSnoopDatalink
    public private(set) var records: [BTSnoopRecord] = []
    /// Records whose packet did not decode: (record number from 1, raw bytes, error).
    public private(set) var undecodable: [(index: Int, bytes: [UInt8], error: DecodeError)] = []
    /// Monitor records of other kinds (index events, system notes) skipped, by record number.
    public private(set) var skippedMonitorRecords: Int = 0
    /// Set when the file ends in the middle of a record.
    public private(set) var trailingError: DecodeError?

    static let magic: [UInt8] = Array("btsnoop\0".utf8)

    public init(bytes: [UInt8]) throws(DecodeError) {
        var r = ByteReader(bytes, context: "btsnoop header")
        let magic = try r.bytes(8)
        guard magic == Self.magic else {
            throw .malformed(what: "btsnoop header", detail: "missing \"btsnoop\" magic; not a btsnoop capture")
        }
        let version = try Self.be32(&r)
        guard version == 1 else { throw .invalidValue(what: "btsnoop header", field: "version", value: Int(version)) }
        let link = try Self.be32(&r)
        guard let datalink = BTSnoopDatalink(rawValue: link) else {
            throw .invalidValue(what: "btsnoop header", field: "datalink (supported: 1002 H4, 2001 monitor)", value: Int(link))
        }
        self.datalink = datalink
        var index = 0
        while !r.isAtEnd {
            index += 1
            do {
                try readRecord(&r, index: index)
            } catch {
                trailingError = error
                break
            }
        }
    }

    private mutating func readRecord(_ r: inout ByteReader, index: Int) throws(DecodeError) {
        var header = ByteReader(try r.bytes(24), context: "btsnoop record header")
        let originalLength = try Self.be32(&header)
        let includedLength = Int(try Self.be32(&header))
        let flags = try Self.be32(&header)
        let drops = try Self.be32(&header)
        let timestamp = Int64(bitPattern: try Self.be64(&header))
        _ = originalLength
        let data = try r.bytes(includedLength)
        switch datalink {
        case .h4:
            let direction: PacketDirection = flags & 1 == 0 ? .sent : .received
            do {
                let packet = try HCIPacket(h4: data)
                records.append(BTSnoopRecord(direction: direction, timestamp: timestamp, packet: packet, drops: drops))
            } catch {
                undecodable.append((index, data, error))
            }
        case .linuxMonitor:
            // Flags hold the monitor opcode: 2/3 command/event, 4/5 ACL tx/rx, 6/7 SCO, 18/19 ISO.
            let type: (HCIPacketType, PacketDirection)?
            switch flags & 0xFFFF {
            case 2: type = (.command, .sent)
            case 3: type = (.event, .received)
            case 4: type = (.acl, .sent)
            case 5: type = (.acl, .received)
            case 6: type = (.sco, .sent)
            case 7: type = (.sco, .received)
            case 18: type = (.iso, .sent)
            case 19: type = (.iso, .received)
            default: type = nil
            }
            guard let (packetType, direction) = type else { skippedMonitorRecords += 1; return }
            do {
                let packet = try HCIPacket(type: packetType, body: data)
                records.append(BTSnoopRecord(direction: direction, timestamp: timestamp, packet: packet, drops: drops))
            } catch {
                undecodable.append((index, data, error))
            }
        }
    }

    static func be32(_ r: inout ByteReader) throws(DecodeError) -> UInt32 { try r.u32().byteSwapped }
    static func be64(_ r: inout ByteReader) throws(DecodeError) -> UInt64 { try r.u64().byteSwapped }
}
