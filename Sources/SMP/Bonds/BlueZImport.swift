#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLEWire

/// Reads the LE bonds that BlueZ's bluetoothd kept (`/var/lib/bluetooth/<adapter>/<peer>/info`,
/// ini files described in BlueZ's doc/settings-storage.txt), so a gateway that stops using
/// bluetoothd keeps its pairings.
///
///     let (bonds, problems) = BlueZImport.bonds(adapterDirectory: "/var/lib/bluetooth/00:1B:DC:0F:00:01")
public enum BlueZImport {
    /// The adapter directories in BlueZ's storage directory (usually `/var/lib/bluetooth`,
    /// readable by root only), sorted; `.io` with the errno when it cannot be listed.
    ///
    ///     for (adapter, path) in try BlueZImport.adapters(in: "/var/lib/bluetooth") { ... }
    public static func adapters(in directory: String) throws(BondStoreError) -> [(adapter: BluetoothAddress, directory: String)] {
        guard let dir = opendir(directory) else { throw .io(path: directory, operation: "listing", errno: errno) }
        defer { closedir(dir) }
        return addressEntries(dir).map { ($0.address, directory + "/" + $0.name) }
    }

    /// Every peer directory's bond under one adapter directory; files that do not give an LE
    /// bond are listed in `problems` with their path.
    public static func bonds(adapterDirectory: String) -> (bonds: [Bond], problems: [BondStoreError]) {
        guard let dir = opendir(adapterDirectory) else {
            return ([], [.io(path: adapterDirectory, operation: "listing", errno: errno)])
        }
        defer { closedir(dir) }
        var bonds: [Bond] = [], problems: [BondStoreError] = []
        for (name, peer) in addressEntries(dir) {
            let path = adapterDirectory + "/" + name + "/info"
            do throws(BondStoreError) {
                if let b = try bond(infoFile: path, peer: peer) { bonds.append(b) }
            } catch {
                problems.append(error)
            }
        }
        return (bonds, problems)
    }

    /// The bond in one `info` file; nil when it holds no LE keys (a BR/EDR-only device).
    public static func bond(infoFile path: String, peer: BluetoothAddress) throws(BondStoreError) -> Bond? {
        guard let text = readText(path) else { throw .io(path: path, operation: "reading", errno: errno) }
        let groups = parseINI(text)
        let type: LEAddressType
        switch groups["General"]?["AddressType"] {
        case "public": type = .public
        case "static", "random": type = .random
        case nil: return nil
        case let other?: throw .corrupt(path: path, detail: "AddressType '\(other)' is neither public nor static")
        }
        let address = LEAddress(peer, type: type)
        // BlueZ keeps no pairing date; the info file was last written when the keys were.
        var info = stat()
        let written = stat(path, &info) == 0 ? Int64(info.st_mtim.tv_sec) : 0
        var bond = Bond(peer: address, identityAddress: address, created: written)
        bond.longTermKey = try ltk(groups["LongTermKey"], path)
        bond.localLongTermKey = try ltk(groups["PeripheralLongTermKey"] ?? groups["SlaveLongTermKey"], path)
        if let k = groups["IdentityResolvingKey"]?["Key"] {
            guard let irk = key(k) else { throw .corrupt(path: path, detail: "IdentityResolvingKey Key is not 32 hex digits") }
            bond.identityResolvingKey = irk
        }
        if let k = groups["RemoteSignatureKey"]?["Key"] {
            guard let csrk = key(k) else { throw .corrupt(path: path, detail: "RemoteSignatureKey Key is not 32 hex digits") }
            bond.signatureKey = csrk
        }
        guard bond.longTermKey != nil || bond.localLongTermKey != nil || bond.identityResolvingKey != nil else { return nil }
        return bond
    }

    /// A [LongTermKey]-style group: Key, Authenticated (BlueZ writes the kernel's key type:
    /// 0/1 legacy unauthenticated/authenticated, 2/3 the same for P-256), EncSize, EDiv, Rand.
    static func ltk(_ g: [String: String]?, _ path: String) throws(BondStoreError) -> LongTermKey? {
        guard let g else { return nil }
        guard let k = g["Key"].flatMap(key), let size = g["EncSize"].flatMap({ UInt8($0) }), (7...16).contains(size),
              let ediv = UInt16(g["EDiv"] ?? "0"), let rand = UInt64(g["Rand"] ?? "0") else {
            throw .corrupt(path: path, detail: "a long term key group lacks Key, EncSize, EDiv or Rand")
        }
        let kind: Int
        switch g["Authenticated"] ?? "0" {
        case "true": kind = 1
        case "false": kind = 0
        case let s: kind = Int(s) ?? 0
        }
        return LongTermKey(key: k, ediv: ediv, rand: rand, keySize: size, authenticated: kind == 1 || kind == 3, secureConnections: kind >= 2)
    }

    /// BlueZ writes keys as the hex of their octets in the order the kernel holds them, least
    /// significant first.
    static func key(_ s: String) -> UInt128? {
        guard s.utf8.count == 32 else { return nil }
        var octets: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            guard let b = UInt8(s[i..<j], radix: 16) else { return nil }
            octets.append(b)
            i = j
        }
        return UInt128(littleEndianBytes: octets)
    }

    static func parseINI(_ text: String) -> [String: [String: String]] {
        var groups: [String: [String: String]] = [:]
        var current = ""
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
                continue
            }
            guard let eq = line.firstIndex(of: "=") else { continue }
            groups[current, default: [:]][String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return groups
    }

    static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 256 * 1024 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
