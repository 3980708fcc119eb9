import BLECore
import BLEWire

/// The text form of one bond file: `key=value` lines between a header and an `end` line (so a
/// cut-off file is recognised). Keys are hex, most significant octet first.
///
///     # swift-ble-host bond 1
///     peer=C0:11:22:33:44:77/random
///     ltk=2965F176A1084A02FD3F6A20CE636E20
///     ...
///     gatt.cccd=000A:0001,0010:0002
///     gatt.clientFeatures=05
///     gatt.databaseHash=F1CA2D48ECF58BAC8A8830BBB9FBA990
///     end
///
/// Keys a reader does not know are skipped, so a key added later keeps the version: an older
/// reader loads the file without it, and a file without it loads as before. Added so:
/// `gatt.cccd` (the CCCDs a GATT server keeps per bond, handle and value in hex),
/// `gatt.clientFeatures` (the client's Client Supported Features octet, when not 0) and
/// `gatt.databaseHash` (the Database Hash the client was last change-aware of; all zero:
/// change-unaware).
enum BondFile {
    static let header = "# swift-ble-host bond 1"

    static func encode(_ b: Bond) -> String {
        var lines = [header, "peer=\(address(b.peer))", "created=\(b.created)"]
        if let id = b.identityAddress { lines.append("identity=\(address(id))") }
        for (prefix, key) in [("ltk", b.longTermKey), ("localLtk", b.localLongTermKey)] {
            guard let k = key else { continue }
            lines += ["\(prefix)=\(hex(k.key))", "\(prefix).ediv=\(k.ediv)", "\(prefix).rand=\(k.rand)", "\(prefix).keySize=\(k.keySize)",
                      "\(prefix).authenticated=\(k.authenticated ? 1 : 0)", "\(prefix).secureConnections=\(k.secureConnections ? 1 : 0)"]
        }
        if let irk = b.identityResolvingKey { lines.append("irk=\(hex(irk))") }
        if let csrk = b.signatureKey { lines.append("csrk=\(hex(csrk))") }
        if let n = b.peerSignCounter { lines.append("csrk.signCounter=\(n)") }
        if let csrk = b.localSignatureKey { lines += ["localCsrk=\(hex(csrk))", "localCsrk.signCounter=\(b.localSignCounter)"] }
        let cccds = b.clientConfigurations.filter { $0.value != 0 }.sorted { $0.key < $1.key }.prefix(Bond.clientConfigurationLimit)
        if !cccds.isEmpty { lines.append("gatt.cccd=" + cccds.map { "\(hex16($0.key)):\(hex16($0.value))" }.joined(separator: ",")) }
        if b.clientSupportedFeatures != 0 { lines.append("gatt.clientFeatures=" + String(hex16(UInt16(b.clientSupportedFeatures)).suffix(2))) }
        if let h = b.clientDatabaseHash { lines.append("gatt.databaseHash=\(hex(h))") }
        lines.append("end")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a bond file; the error says what is wrong (the store adds the path).
    static func decode(_ text: String) throws(BondFileError) -> Bond {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == header else { throw .init("first line is not '\(header)'") }
        guard lines.last == "end" else { throw .init("no 'end' line: the file is cut short") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst().dropLast() {
            guard let eq = line.firstIndex(of: "=") else { throw .init("line '\(line.prefix(40))' has no '='") }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        guard let peerText = fields["peer"], let peer = parseAddress(peerText) else { throw .init("missing or bad 'peer'") }
        var bond = Bond(peer: peer)
        if let c = fields["created"] { guard let v = Int64(c) else { throw .init("bad 'created'") }; bond.created = v }
        if let id = fields["identity"] { guard let a = parseAddress(id) else { throw .init("bad 'identity'") }; bond.identityAddress = a }
        bond.longTermKey = try ltk("ltk", fields)
        bond.localLongTermKey = try ltk("localLtk", fields)
        if let v = fields["irk"] { guard let k = parseKey(v) else { throw .init("bad 'irk'") }; bond.identityResolvingKey = k }
        if let v = fields["csrk"] { guard let k = parseKey(v) else { throw .init("bad 'csrk'") }; bond.signatureKey = k }
        if let v = fields["csrk.signCounter"] { guard let n = UInt32(v) else { throw .init("bad 'csrk.signCounter'") }; bond.peerSignCounter = n }
        if let v = fields["localCsrk"] {
            guard let k = parseKey(v), let n = fields["localCsrk.signCounter"].flatMap({ UInt32($0) }) else { throw .init("incomplete or bad 'localCsrk' fields") }
            bond.localSignatureKey = k
            bond.localSignCounter = n
        }
        if let v = fields["gatt.cccd"] { bond.clientConfigurations = try clientConfigurations(v) }
        if let v = fields["gatt.clientFeatures"] {
            guard v.utf8.count == 2, v.allSatisfy(\.isHexDigit), let f = UInt8(v, radix: 16) else { throw .init("bad 'gatt.clientFeatures'") }
            bond.clientSupportedFeatures = f
        }
        if let v = fields["gatt.databaseHash"] { guard let h = parseKey(v) else { throw .init("bad 'gatt.databaseHash'") }; bond.clientDatabaseHash = h }
        return bond
    }

    /// `HHHH:VVVV` pairs, comma-separated: handle (not 0) and value, 4 hex digits each.
    private static func clientConfigurations(_ text: String) throws(BondFileError) -> [UInt16: UInt16] {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
        guard entries.count <= Bond.clientConfigurationLimit else { throw .init("more than \(Bond.clientConfigurationLimit) 'gatt.cccd' entries") }
        var values: [UInt16: UInt16] = [:]
        for entry in entries {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].utf8.count == 4, parts[1].utf8.count == 4,
                  parts.allSatisfy({ $0.allSatisfy(\.isHexDigit) }),
                  let handle = UInt16(parts[0], radix: 16), let value = UInt16(parts[1], radix: 16), handle != 0,
                  values[handle] == nil else { throw .init("bad 'gatt.cccd' entry '\(entry.prefix(20))'") }
            values[handle] = value
        }
        return values
    }

    static func hex16(_ v: UInt16) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - s.count) + s
    }

    private static func ltk(_ p: String, _ f: [String: String]) throws(BondFileError) -> LongTermKey? {
        guard let keyText = f[p] else { return nil }
        guard let key = parseKey(keyText), let ediv = f["\(p).ediv"].flatMap({ UInt16($0) }), let rand = f["\(p).rand"].flatMap({ UInt64($0) }),
              let size = f["\(p).keySize"].flatMap({ UInt8($0) }), (7...16).contains(size),
              let auth = f["\(p).authenticated"], let sc = f["\(p).secureConnections"] else { throw .init("incomplete or bad '\(p)' fields") }
        return LongTermKey(key: key, ediv: ediv, rand: rand, keySize: size, authenticated: auth == "1", secureConnections: sc == "1")
    }

    static func address(_ a: LEAddress) -> String { "\(a.address)/\(a.type.isRandom ? "random" : "public")" }

    static func parseAddress(_ s: String) -> LEAddress? {
        let parts = s.split(separator: "/")
        guard parts.count == 2, let a = BluetoothAddress(String(parts[0])) else { return nil }
        switch parts[1] {
        case "public": return LEAddress(a, type: .public)
        case "random": return LEAddress(a, type: .random)
        default: return nil
        }
    }

    static func hex(_ v: UInt128) -> String {
        v.bigEndianBytes.map { b in let s = String(b, radix: 16, uppercase: true); return s.count == 1 ? "0" + s : s }.joined()
    }

    /// 32 hex digits, most significant first.
    static func parseKey(_ s: String) -> UInt128? {
        guard s.utf8.count == 32 else { return nil }
        var v: UInt128 = 0
        for c in s { guard let d = c.hexDigitValue else { return nil }; v = v << 4 | UInt128(d) }
        return v
    }
}

/// What is wrong with a bond file's text.
struct BondFileError: Error {
    let detail: String
    init(_ detail: String) { self.detail = detail }
}
