#if canImport(Glibc)
import Glibc
#endif
import BLECore

/// Bonds in files: `<directory>/<adapter address>/<peer address>-<public|random>`, one file
/// per adapter and peer, mode 0600 in 0700 directories, each written to a temporary file and
/// renamed over the old one so a crash never leaves half a bond. A file that does not parse is
/// reported (with its path) through `onProblem` and otherwise ignored.
///
///     let store = try FileBondStore(adapter: info.address)   // BLE_BOND_DIR or ~/.local/state/swift-ble-host/bonds
public final class FileBondStore: BondStore, @unchecked Sendable { // immutable after init; file access is serialised by `lock`
    /// The adapter's own directory.
    public let directory: String
    private let onProblem: @Sendable (BondStoreError) -> Void
    private let lock = NSLockLike()

    /// The directory bonds go to when none is given: `BLE_BOND_DIR`, else
    /// `$XDG_STATE_HOME/swift-ble-host/bonds`, else `~/.local/state/swift-ble-host/bonds`.
    public static var defaultDirectory: String {
        if let d = getenv("BLE_BOND_DIR"), d.pointee != 0 { return String(cString: d) }
        if let x = getenv("XDG_STATE_HOME"), x.pointee != 0 { return String(cString: x) + "/swift-ble-host/bonds" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/state/swift-ble-host/bonds"
    }

    /// Opens (and creates, mode 0700) the bond directory of `adapter` under `directory`.
    public init(adapter: BluetoothAddress, directory: String? = nil,
                onProblem: @escaping @Sendable (BondStoreError) -> Void = { _ in }) throws(BondStoreError) {
        let root = directory ?? Self.defaultDirectory
        self.directory = root + "/" + adapter.description
        self.onProblem = onProblem
        try Self.makeDirectories(self.directory)
    }

    public func bond(for peer: LEAddress) -> Bond? {
        lock.withLock {
            if let b = readFile(path(for: peer)) { return b }
            return loadAll().first { $0.identityAddress == peer || $0.peer == peer }
        }
    }

    public func allBonds() -> [Bond] { lock.withLock { loadAll() } }

    public func save(_ bond: Bond) throws(BondStoreError) {
        let target = path(for: bond.peer)
        let result: Result<Void, BondStoreError> = lock.withLock {
            do throws(BondStoreError) { try Self.writeAtomically(BondFile.encode(bond), to: target) } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }

    public func remove(_ peer: LEAddress) throws(BondStoreError) {
        let result: Result<Void, BondStoreError> = lock.withLock {
            var paths = [path(for: peer)]
            paths += loadAll().filter { $0.identityAddress == peer }.map { path(for: $0.peer) }
            for p in paths where unlink(p) != 0 && errno != ENOENT {
                return .failure(.io(path: p, operation: "removing", errno: errno))
            }
            return .success(())
        }
        try result.get()
    }

    /// The file of `peer`'s bond.
    public func path(for peer: LEAddress) -> String {
        directory + "/" + peer.address.description + (peer.type.isRandom ? "-random" : "-public")
    }

    private func loadAll() -> [Bond] {
        guard let dir = opendir(directory) else {
            onProblem(.io(path: directory, operation: "listing", errno: errno))
            return []
        }
        defer { closedir(dir) }
        var bonds: [Bond] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasSuffix("-public") || name.hasSuffix("-random") else { continue }
            if let b = readFile(directory + "/" + name) { bonds.append(b) }
        }
        return bonds.sorted { $0.peer.address < $1.peer.address }
    }

    /// Reads one bond file; nil when it is absent or does not parse (reported).
    private func readFile(_ path: String) -> Bond? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno != ENOENT { onProblem(.io(path: path, operation: "opening", errno: errno)) }
            return nil
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { onProblem(.io(path: path, operation: "reading", errno: errno)); return nil }
            if n == 0 { break }
            bytes += chunk[0..<n]
            // A bond file is a few hundred bytes: anything far larger is not one.
            if bytes.count > 64 * 1024 { onProblem(.corrupt(path: path, detail: "larger than 64 KiB")); return nil }
        }
        do throws(BondFileError) {
            return try BondFile.decode(String(decoding: bytes, as: UTF8.self))
        } catch {
            onProblem(.corrupt(path: path, detail: error.detail))
            return nil
        }
    }

    static func makeDirectories(_ path: String) throws(BondStoreError) {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o700) != 0 && errno != EEXIST { throw .io(path: current, operation: "creating directory", errno: errno) }
        }
        // The adapter's directory holds keys: only its owner may enter it.
        if chmod(path, 0o700) != 0 { throw .io(path: path, operation: "chmod 0700", errno: errno) }
    }

    static func writeAtomically(_ text: String, to path: String) throws(BondStoreError) {
        let temp = path + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: temp, operation: "creating", errno: errno) }
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                let e = errno
                close(fd); unlink(temp)
                throw .io(path: temp, operation: "writing", errno: e)
            }
            offset += n
        }
        if fchmod(fd, 0o600) != 0 || fsync(fd) != 0 {
            let e = errno
            close(fd); unlink(temp)
            throw .io(path: temp, operation: "syncing", errno: e)
        }
        close(fd)
        if rename(temp, path) != 0 {
            let e = errno
            unlink(temp)
            throw .io(path: path, operation: "renaming \(temp) to", errno: e)
        }
    }
}
