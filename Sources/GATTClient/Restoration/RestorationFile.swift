import BLEWire
import BLECore

/// The bytes of a restoration store's file (docs/restoration.md has the layout). All numbers
/// little-endian; a UUID is its width (2, 4 or 16) then its wire octets.
///
///     "BLERESTO" | version 1 | link count u16
///     link:         peer address (6) | address type u8 | security level u8 (1-4)
///                   | reconnect u8 (0 never, 1 always) [always: max attempts u32 (0xFFFFFFFF: no limit),
///                     initial ms u32, multiplier x1000 u32, maximum ms u32, jitter x1000 u16]
///                   | subscription count u8
///     subscription: service UUID | characteristic UUID | flags u8 (bit 0 indications,
///                   bit 1 written encrypted, bit 2 Database Hash follows) | value handle u16
///                   | CCCD handle u16 | [Database Hash (16)]
///     CRC-32 (IEEE 802.3) of everything before it, u32
///
/// Decoding is total: a file cut short, flipped bits, an unknown version, repeated peers or
/// counts past the bounds end in `RestorationFile.Problem`, never a trap.
///
///     let links = try RestorationFile.decode(RestorationFile.encode(links))
enum RestorationFile {
    static let magic: [UInt8] = Array("BLERESTO".utf8)
    static let version: UInt8 = 1
    /// Links one file holds at most.
    static let maximumLinks = 1024
    /// Subscriptions one link holds at most.
    static let maximumSubscriptions = 64
    /// The largest file: the bounds above with 128-bit UUIDs and hashes fit well within it.
    static let maximumSize = 1024 * 1024

    /// Why a file does not decode: a version this build does not read, or damage.
    enum Problem: Error, Equatable {
        case version(UInt8)
        case corrupt(DecodeError)
    }

    static func encode(_ links: [RestorableLink]) -> [UInt8] {
        var out = magic
        out.appendLE(version)
        out.appendLE(UInt16(truncatingIfNeeded: links.count))
        for link in links {
            out.appendLE(link.peer.address)
            out.appendLE(link.peer.type.rawValue)
            out.appendLE(UInt8(link.security.rawValue))
            switch link.reconnect {
            case .never:
                out.appendLE(UInt8(0))
            case .always(let maxAttempts, let backoff):
                out.appendLE(UInt8(1))
                out.appendLE(maxAttempts.map { UInt32(clamping: max(0, $0)) } ?? UInt32.max)
                out.appendLE(milliseconds(backoff.initial))
                out.appendLE(UInt32(clamping: Int((max(0, backoff.multiplier) * 1000).rounded())))
                out.appendLE(milliseconds(backoff.maximum))
                out.appendLE(UInt16(clamping: Int((max(0, backoff.jitter) * 1000).rounded())))
            }
            out.appendLE(UInt8(truncatingIfNeeded: link.subscriptions.count))
            for s in link.subscriptions {
                GATTCacheFile.appendUUID(s.characteristic.service.uuid, to: &out)
                GATTCacheFile.appendUUID(s.characteristic.uuid, to: &out)
                let hash = s.databaseHash?.count == 16 ? s.databaseHash : nil
                out.appendLE(UInt8((s.indications ? 1 : 0) | (s.writtenEncrypted ? 2 : 0) | (hash != nil ? 4 : 0)))
                out.appendLE(s.valueHandle)
                out.appendLE(s.cccdHandle)
                out += hash ?? []
            }
        }
        out.appendLE(CRC32.checksum(out))
        return out
    }

    static func decode(_ bytes: [UInt8]) throws(Problem) -> [RestorableLink] {
        // Another version's file is told apart from damage: it is kept for the build that reads it.
        if bytes.count > magic.count, Array(bytes.prefix(magic.count)) == magic, bytes[magic.count] != version { throw .version(bytes[magic.count]) }
        do throws(DecodeError) {
            guard bytes.count <= maximumSize else { throw .malformed(what: what, detail: "\(bytes.count) bytes, more than \(maximumSize)") }
            guard bytes.count >= magic.count + 1, Array(bytes.prefix(magic.count)) == magic else {
                throw .malformed(what: what, detail: "not a restoration file (no BLERESTO header)")
            }
            guard bytes.count >= magic.count + 5 else { throw .truncated(what: what, needed: magic.count + 5 - bytes.count) }
            let body = bytes.count - 4
            var crc = ByteReader(bytes, range: body..<bytes.count, context: "restoration file")
            guard CRC32.checksum(bytes[..<body]) == (try crc.u32()) else { throw .malformed(what: what, detail: "CRC-32 mismatch: the file is damaged") }
            var r = ByteReader(bytes, range: magic.count + 1..<body, context: "restoration file")
            let count = Int(try r.u16())
            guard count <= maximumLinks else { throw .invalidValue(what: what, field: "link count (at most \(maximumLinks))", value: count) }
            var links: [RestorableLink] = []
            var seen = Set<LEAddress>()
            for _ in 0..<count {
                let link = try readLink(&r)
                guard seen.insert(link.peer).inserted else { throw .malformed(what: what, detail: "\(link.peer.address) (\(link.peer.type)) is stored twice") }
                links.append(link)
            }
            try r.expectEnd()
            return links
        } catch {
            throw .corrupt(error)
        }
    }

    private static let what = "restoration file"

    private static func readLink(_ r: inout ByteReader) throws(DecodeError) -> RestorableLink {
        let address = try r.address()
        let typeByte = try r.u8()
        guard let type = LEAddressType(rawValue: typeByte) else { throw .invalidValue(what: what, field: "peer address type", value: Int(typeByte)) }
        let levelByte = try r.u8()
        guard let security = SecurityLevel(rawValue: Int(levelByte)) else { throw .invalidValue(what: what, field: "security level", value: Int(levelByte)) }
        let reconnect: RestorableReconnect
        switch try r.u8() {
        case 0:
            reconnect = .never
        case 1:
            let attempts = try r.u32()
            let initial = try r.u32(), multiplier = try r.u32(), maximum = try r.u32(), jitter = try r.u16()
            guard jitter <= 1000 else { throw .invalidValue(what: what, field: "backoff jitter (x1000, at most 1000)", value: Int(jitter)) }
            reconnect = .always(maxAttempts: attempts == UInt32.max ? nil : Int(attempts),
                                backoff: .exponential(initial: .milliseconds(Int(initial)), multiplier: Double(multiplier) / 1000,
                                                      maximum: .milliseconds(Int(maximum)), jitter: Double(jitter) / 1000))
        case let other:
            throw .invalidValue(what: what, field: "reconnect policy", value: Int(other))
        }
        let subscriptionCount = Int(try r.u8())
        guard subscriptionCount <= maximumSubscriptions else {
            throw .invalidValue(what: what, field: "subscription count (at most \(maximumSubscriptions))", value: subscriptionCount)
        }
        var subscriptions: [RestorableSubscription] = []
        for _ in 0..<subscriptionCount {
            let service = try GATTCacheFile.readUUID(&r, what: what)
            let characteristic = CharacteristicIdentifier(uuid: try GATTCacheFile.readUUID(&r, what: what), service: ServiceIdentifier(uuid: service))
            let flags = try r.u8()
            guard flags & ~0x07 == 0 else { throw .invalidValue(what: what, field: "subscription flags", value: Int(flags)) }
            let valueHandle = try r.u16(), cccdHandle = try r.u16()
            guard valueHandle >= 1, cccdHandle > valueHandle else {
                throw .malformed(what: what, detail: "CCCD handle \(cccdHandle.hex) does not follow value handle \(valueHandle.hex)")
            }
            let hash = flags & 4 != 0 ? try r.bytes(16) : nil
            guard !subscriptions.contains(where: { $0.characteristic == characteristic }) else {
                throw .malformed(what: what, detail: "\(characteristic.uuid) of \(address) is stored twice")
            }
            subscriptions.append(RestorableSubscription(characteristic: characteristic, indications: flags & 1 != 0, valueHandle: valueHandle,
                                                        cccdHandle: cccdHandle, databaseHash: hash, writtenEncrypted: flags & 2 != 0))
        }
        return RestorableLink(peer: LEAddress(address, type: type), reconnect: reconnect, security: security, subscriptions: subscriptions)
    }

    private static func milliseconds(_ d: Duration) -> UInt32 {
        let (seconds, attoseconds) = d.components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64(UInt32.max / 1000) else { return UInt32.max }
        return UInt32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
