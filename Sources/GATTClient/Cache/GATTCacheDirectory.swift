#if canImport(Glibc)
import Glibc
#endif
import BLETransport
import BLEWire

/// The files of a persistent `GATTCache`: `<directory>/<peer address>-<address type>`, one
/// per peer (`GATTCacheFile`), mode 0600 in a 0700 directory of this user's, each written to
/// a new temporary file and renamed over the old one. It runs on the global executor, so
/// file I/O never holds the adapter's queue. Nothing is created before the first write, so a
/// read-only home only loses the cache. At most `maxPeers` files: writing a new peer's past
/// that removes the least recently used (the modification time, refreshed by each load).
actor GATTCacheDirectory {
    let path: String
    let maxPeers: Int
    private let onProblem: @Sendable (GATTCacheError) -> Void
    /// The directory, open (files are reached relative to it, never through a link); nil
    /// until it exists.
    private var descriptor: Int32?
    /// Makes each temporary file name new (with the process id).
    private var writes: UInt64 = 0

    init(path: String, maxPeers: Int, onProblem: @escaping @Sendable (GATTCacheError) -> Void) {
        self.path = path
        self.maxPeers = max(1, maxPeers)
        self.onProblem = onProblem
    }

    deinit { if let descriptor { close(descriptor) } }

    /// The snapshot stored for `peer`, nil when there is none or it is unusable (reported
    /// through `onProblem` and removed, so the peer is discovered and written again).
    func load(_ peer: LEAddress) -> GATTDatabaseSnapshot? {
        let name = Self.fileName(peer)
        let bytes: [UInt8]?
        do throws(GATTCacheError) {
            guard let fd = try directory(creating: false) else { return nil }
            bytes = try read(name, in: fd)
        } catch {
            onProblem(error)
            return nil
        }
        guard let bytes else { return nil }
        do throws(DecodeError) {
            return try GATTCacheFile.decode(bytes, peer: peer)
        } catch {
            onProblem(.corrupt(path: path + "/" + name, detail: "\(error)"))
            if let descriptor { unlinkat(descriptor, name, 0) }
            return nil
        }
    }

    /// Writes `snapshot` as `peer`'s file, making room first when it is a new peer. A
    /// database past the size of one file is not written (and an older file removed).
    func write(_ snapshot: GATTDatabaseSnapshot, for peer: LEAddress) {
        let bytes = GATTCacheFile.encode(snapshot, peer: peer)
        guard bytes.count <= GATTCacheFile.maximumSize else {
            onProblem(.tooLarge(peer: peer.address, size: bytes.count, limit: GATTCacheFile.maximumSize))
            remove(peer)
            return
        }
        do throws(GATTCacheError) {
            guard let fd = try directory(creating: true) else { return }
            let name = Self.fileName(peer)
            var st = stat()
            if fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 { evict(in: fd, keeping: maxPeers - 1) }
            try writeAtomically(bytes, to: name, in: fd)
        } catch {
            onProblem(error)
        }
    }

    /// Removes `peer`'s file, when there is one.
    func remove(_ peer: LEAddress) {
        guard let fd = descriptor ?? (try? directory(creating: false)) else { return }
        let name = Self.fileName(peer)
        if unlinkat(fd, name, 0) != 0 && errno != ENOENT { onProblem(.io(path: path + "/" + name, operation: "removing", errno: errno)) }
    }

    /// The peers with a file.
    func peers() -> [LEAddress] {
        guard let fd = descriptor ?? (try? directory(creating: false)) else { return [] }
        return entries(in: fd).map(\.peer)
    }

    // MARK: Files

    private static let typeNames: [(LEAddressType, String)] = [
        (.public, "public"), (.random, "random"), (.publicIdentity, "public-identity"), (.randomIdentity, "random-identity"),
    ]

    static func fileName(_ peer: LEAddress) -> String {
        "\(peer.address)-" + (typeNames.first { $0.0 == peer.type }?.1 ?? "public")
    }

    private static func peer(fileName name: String) -> LEAddress? {
        guard name.utf8.count > 18, let address = BluetoothAddress(String(name.prefix(17))), name.dropFirst(17).first == "-" else { return nil }
        let type = name.dropFirst(18)
        return typeNames.first { $0.1 == type }.map { LEAddress(address, type: $0.0) }
    }

    /// The peer files in the directory with their modification times.
    private func entries(in fd: Int32) -> [(peer: LEAddress, name: String, modified: Int)] {
        let listing = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard listing >= 0, let dir = fdopendir(listing) else {
            let e = errno
            if listing >= 0 { close(listing) }
            onProblem(.io(path: path, operation: "listing", errno: e))
            return []
        }
        defer { closedir(dir) }
        var found: [(LEAddress, String, Int)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let peer = Self.peer(fileName: name) else { continue }
            var st = stat()
            guard fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            found.append((peer, name, st.st_mtim.tv_sec * 1_000_000_000 + st.st_mtim.tv_nsec))
        }
        return found
    }

    /// Removes the least recently used files until at most `keeping` are left.
    private func evict(in fd: Int32, keeping: Int) {
        let all = entries(in: fd)
        guard all.count > keeping else { return }
        for old in all.sorted(by: { $0.modified < $1.modified }).prefix(all.count - keeping) where unlinkat(fd, old.name, 0) != 0 {
            onProblem(.io(path: path + "/" + old.name, operation: "removing", errno: errno))
        }
    }

    /// The file's bytes (at most one byte past the limit, so a larger file shows as such),
    /// nil when absent; a load refreshes its modification time (least recently used).
    private func read(_ name: String, in directory: Int32) throws(GATTCacheError) -> [UInt8]? {
        let fd = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .io(path: path + "/" + name, operation: "opening", errno: errno)
        }
        defer { close(fd) }
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptorIO.readAll(fd, atMost: GATTCacheFile.maximumSize + 1)
        } catch {
            throw .io(path: path + "/" + name, operation: "reading", errno: error.errno)
        }
        _ = futimens(fd, nil)
        return bytes
    }

    /// Writes to a new temporary file (O_EXCL, mode 0600), syncs it and renames it over `name`:
    /// after a crash the file is the old one or the new one.
    private func writeAtomically(_ bytes: [UInt8], to name: String, in directory: Int32) throws(GATTCacheError) {
        writes += 1
        let temp = ".\(name).\(getpid()).\(writes).tmp"
        do {
            try AtomicFile.replace(name, in: directory, with: bytes, temporaryName: temp, mode: 0o600)
        } catch {
            throw .io(path: error.name.map { path + "/" + $0 } ?? path, operation: error.operation, errno: error.errno)
        }
    }

    // MARK: The directory

    /// The open directory; with `creating`, made first (mode 0700, with its parents). Refuses
    /// a symbolic link, a non-directory and another user's directory.
    private func directory(creating: Bool) throws(GATTCacheError) -> Int32? {
        if let descriptor { return descriptor }
        if creating { try Self.makeDirectories(path) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT && !creating { return nil }
            if e == ELOOP || e == ENOTDIR { throw .unsafeDirectory(path: path, detail: "a symbolic link or not a directory") }
            throw .io(path: path, operation: "opening directory", errno: e)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw .io(path: path, operation: "checking directory", errno: e)
        }
        guard st.st_uid == geteuid() else {
            close(fd)
            throw .unsafeDirectory(path: path, detail: "owned by uid \(st.st_uid), not \(geteuid())")
        }
        if st.st_mode & 0o077 != 0 { _ = fchmod(fd, 0o700) }
        descriptor = fd
        return fd
    }

    private static func makeDirectories(_ path: String) throws(GATTCacheError) {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o700) != 0 && errno != EEXIST { throw .io(path: current, operation: "creating directory", errno: errno) }
        }
    }
}
