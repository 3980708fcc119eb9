#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLETransport
import BLEWire
import Synchronization

/// Bonds in files: `<directory>/<adapter address>/<peer address>-<public|random>`, one file
/// per adapter and peer, mode 0600 in 0700 directories, each written to a new temporary file
/// and renamed over the old one so a crash never leaves half a bond. A file that does not parse
/// is reported (with its path) through `onProblem` and otherwise ignored.
///
/// The tool may run as root, in a directory others can write to: the bond directory and the
/// adapter's directory must be real directories (not symbolic links) owned by this user, or
/// `init` throws `BondStoreError.unsafeDirectory`. Files are reached through the adapter
/// directory's descriptor, never through a link in it (O_NOFOLLOW), and a temporary file is
/// always a new one (O_EXCL), so a planted link cannot redirect a write.
///
///     let store = try FileBondStore(adapter: info.address)   // BLE_BOND_DIR or ~/.local/state/swift-ble-host/bonds
public final class FileBondStore: BondStore {
    /// The adapter's own directory.
    public let directory: String
    /// The bond directory the adapter's directory is in.
    private let root: String
    private let onProblem: @Sendable (BondStoreError) -> Void
    /// Every file access holds it: apps call the store from any thread, off the data path.
    private let files: Mutex<Files>

    private struct Files {
        /// The adapter's directory, open: every file is reached relative to it. Nil until it
        /// exists: nothing is created before the first save.
        var directoryDescriptor: Int32?
        /// Makes each temporary file name new (with the process id).
        var writes: UInt64 = 0
    }

    /// The directory bonds go to when none is given: `BLE_BOND_DIR`, else
    /// `$XDG_STATE_HOME/swift-ble-host/bonds`, else `~/.local/state/swift-ble-host/bonds`.
    public static var defaultDirectory: String {
        if let d = getenv("BLE_BOND_DIR"), d.pointee != 0 { return String(cString: d) }
        if let x = getenv("XDG_STATE_HOME"), x.pointee != 0 { return String(cString: x) + "/swift-ble-host/bonds" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/state/swift-ble-host/bonds"
    }

    /// Opens the bond directory of `adapter` under `directory`, without creating anything: a
    /// store whose directories do not exist yet has no bonds, and its first `save` creates them
    /// (mode 0700), so commands that only read bonds work on a read-only home. Throws
    /// `.unsafeDirectory` when either directory is a symbolic link or another user's.
    public init(adapter: BluetoothAddress, directory: String? = nil,
                onProblem: @escaping @Sendable (BondStoreError) -> Void = { _ in }) throws(BondStoreError) {
        let root = directory ?? Self.defaultDirectory
        self.root = root
        self.directory = root + "/" + adapter.description
        self.onProblem = onProblem
        files = Mutex(Files(directoryDescriptor: try Self.openAdapterDirectory(root: root, name: adapter.description,
                                                                               path: root + "/" + adapter.description, creating: false)))
    }

    /// Opens (with `creating`, after making the missing directories) the adapter's directory
    /// `name` in `root`; nil when it does not exist and `creating` is false. The bond
    /// directory is checked before anything is made in it; the adapter's directory is made
    /// and opened through it.
    private static func openAdapterDirectory(root: String, name: String, path: String, creating: Bool) throws(BondStoreError) -> Int32? {
        if creating { try makeDirectories(root) }
        let rootDescriptor: Int32
        do throws(BondStoreError) {
            rootDescriptor = try openOwnDirectory(root, at: AT_FDCWD)
        } catch {
            if !creating, case .io(_, _, ENOENT) = error { return nil }
            throw error
        }
        defer { close(rootDescriptor) }
        if creating, mkdirat(rootDescriptor, name, 0o700) != 0 && errno != EEXIST {
            throw .io(path: path, operation: "creating directory", errno: errno)
        }
        let fd: Int32
        do throws(BondStoreError) {
            fd = try openOwnDirectory(name, at: rootDescriptor, path: path)
        } catch {
            if !creating, case .io(_, _, ENOENT) = error { return nil }
            throw error
        }
        // The adapter's directory holds keys: only its owner may enter it (changed only when
        // others may, so a read-only file system with a private directory is not touched).
        var st = stat()
        if fstat(fd, &st) != 0 || st.st_mode & 0o077 != 0, fchmod(fd, 0o700) != 0 {
            let e = errno
            close(fd)
            throw .io(path: path, operation: "chmod 0700", errno: e)
        }
        return fd
    }

    /// The adapter's directory, created when missing (by a save).
    private func writableDirectory(_ files: inout Files) throws(BondStoreError) -> Int32 {
        if let directoryDescriptor = files.directoryDescriptor { return directoryDescriptor }
        let name = String(directory.dropFirst(root.count + 1))
        guard let fd = try Self.openAdapterDirectory(root: root, name: name, path: directory, creating: true) else {
            throw .io(path: directory, operation: "opening directory", errno: ENOENT)
        }
        files.directoryDescriptor = fd
        return fd
    }

    deinit { files.withLock { if let directoryDescriptor = $0.directoryDescriptor { close(directoryDescriptor) } } }

    /// The adapters with a directory in the bond directory (`directory`, else
    /// `defaultDirectory`), sorted: their bonds can be listed without opening a controller.
    /// None when the bond directory does not exist yet (nothing is created). Throws
    /// `.unsafeDirectory` for a bond directory `init` would refuse.
    ///
    ///     for adapter in try FileBondStore.adapters() { print(adapter, try FileBondStore(adapter: adapter).allBonds()) }
    public static func adapters(in directory: String? = nil) throws(BondStoreError) -> [BluetoothAddress] {
        let root = directory ?? defaultDirectory
        let fd: Int32
        do throws(BondStoreError) {
            fd = try openOwnDirectory(root, at: AT_FDCWD)
        } catch {
            if case .io(_, _, ENOENT) = error { return [] }
            throw error
        }
        guard let dir = fdopendir(fd) else {
            let e = errno
            close(fd)
            throw .io(path: root, operation: "listing", errno: e)
        }
        defer { closedir(dir) }
        return addressEntries(dir).map(\.address)
    }

    public func bond(for peer: LEAddress) -> Bond? {
        files.withLock { files in
            if let b = readFile(Self.fileName(for: peer), in: files.directoryDescriptor) { return b }
            return loadAll(in: files.directoryDescriptor).first { $0.identityAddress == peer || $0.peer == peer }
        }
    }

    public func allBonds() -> [Bond] { files.withLock { loadAll(in: $0.directoryDescriptor) } }

    public func save(_ bond: Bond) throws(BondStoreError) {
        let result: Result<Void, BondStoreError> = files.withLock { files in
            do throws(BondStoreError) { try writeAtomically(BondFile.encode(bond), to: Self.fileName(for: bond.peer), &files) } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }

    public func update(_ peer: LEAddress, _ change: (inout Bond) -> Bool) throws(BondStoreError) -> Bool {
        let result: Result<Bool, BondStoreError> = files.withLock { files in
            guard var bond = readFile(Self.fileName(for: peer), in: files.directoryDescriptor)
                    ?? loadAll(in: files.directoryDescriptor).first(where: { $0.identityAddress == peer || $0.peer == peer }),
                  change(&bond) else { return .success(false) }
            do throws(BondStoreError) { try writeAtomically(BondFile.encode(bond), to: Self.fileName(for: bond.peer), &files) } catch { return .failure(error) }
            return .success(true)
        }
        return try result.get()
    }

    public func remove(_ peer: LEAddress) throws(BondStoreError) {
        let result: Result<Void, BondStoreError> = files.withLock { files in
            guard let directoryDescriptor = files.directoryDescriptor else { return .success(()) }
            var names = [Self.fileName(for: peer)]
            names += loadAll(in: directoryDescriptor).filter { $0.identityAddress == peer }.map { Self.fileName(for: $0.peer) }
            for name in names where unlinkat(directoryDescriptor, name, 0) != 0 && errno != ENOENT {
                return .failure(.io(path: directory + "/" + name, operation: "removing", errno: errno))
            }
            return .success(())
        }
        try result.get()
    }

    /// The text of the adapter's own file `name` (its static address, its IRK), nil when absent.
    func readOwnFile(_ name: String) throws(BondStoreError) -> String? {
        let result: Result<String?, BondStoreError> = files.withLock { files in
            guard let directoryDescriptor = files.directoryDescriptor else { return .success(nil) }
            do throws(SystemCallError) {
                return .success(try OwnDirectory.read(name, in: directoryDescriptor, atMost: 256).map { String(decoding: $0, as: UTF8.self) })
            } catch {
                return .failure(.io(path: directory + "/" + name, operation: error.call, errno: error.errno))
            }
        }
        return try result.get()
    }

    /// Writes the adapter's own file `name` (mode 0600, atomically), creating the directories.
    func writeOwnFile(_ text: String, to name: String) throws(BondStoreError) {
        let result: Result<Void, BondStoreError> = files.withLock { files in
            do throws(BondStoreError) { try writeAtomically(text, to: name, &files) } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }

    /// The file of `peer`'s bond.
    public func path(for peer: LEAddress) -> String {
        directory + "/" + Self.fileName(for: peer)
    }

    static func fileName(for peer: LEAddress) -> String {
        peer.address.description + (peer.type.isRandom ? "-random" : "-public")
    }

    private func loadAll(in directoryDescriptor: Int32?) -> [Bond] {
        guard let directoryDescriptor else { return [] }
        let fd = openat(directoryDescriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let dir = fdopendir(fd) else {
            let e = errno
            if fd >= 0 { close(fd) }
            onProblem(.io(path: directory, operation: "listing", errno: e))
            return []
        }
        defer { closedir(dir) }
        let names = entryNames(dir).filter { $0.hasSuffix("-public") || $0.hasSuffix("-random") }
        return names.compactMap { readFile($0, in: directoryDescriptor) }.sorted { $0.peer.address < $1.peer.address }
    }

    /// Reads one bond file of the adapter's directory (never through a symbolic link); nil
    /// when it is absent or does not parse (reported).
    private func readFile(_ name: String, in directoryDescriptor: Int32?) -> Bond? {
        let path = directory + "/" + name
        guard let directoryDescriptor else { return nil }
        // A bond file is a few hundred bytes: anything far larger is not one.
        let limit = 64 * 1024
        let bytes: [UInt8]
        do {
            guard let read = try OwnDirectory.read(name, in: directoryDescriptor, atMost: limit + 1) else { return nil }
            bytes = read
        } catch {
            onProblem(.io(path: path, operation: error.call, errno: error.errno))
            return nil
        }
        if bytes.count > limit { onProblem(.corrupt(path: path, detail: "larger than 64 KiB")); return nil }
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
    }

    /// Opens `name` (relative to `directory`; `path` in errors) as a directory of this user's,
    /// refusing a symbolic link (O_NOFOLLOW), a file that is no directory and a directory
    /// another user owns.
    static func openOwnDirectory(_ name: String, at directory: Int32, path: String? = nil) throws(BondStoreError) -> Int32 {
        let path = path ?? name
        do {
            return try OwnDirectory.open(name, at: directory)
        } catch {
            switch error {
            case .symbolicLink: throw .unsafeDirectory(path: path, .symbolicLink)
            case .notADirectory: throw .unsafeDirectory(path: path, .notADirectory)
            case .ownedByAnotherUser(let owner, let user): throw .unsafeDirectory(path: path, .ownedByAnotherUser(owner: owner, user: user))
            case .failed(let operation, let e): throw .io(path: path, operation: operation, errno: e)
            }
        }
    }

    /// Writes `text` to a new file next to `name` (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600),
    /// syncs it, renames it over `name` and syncs the directory, so the bond is either the
    /// old one or the new one after a crash, and on disk once this returns.
    private func writeAtomically(_ text: String, to name: String, _ files: inout Files) throws(BondStoreError) {
        let directoryDescriptor = try writableDirectory(&files)
        files.writes += 1
        let temp = ".\(name).\(getpid()).\(files.writes).tmp"
        do {
            try AtomicFile.replace(name, in: directoryDescriptor, with: Array(text.utf8), temporaryName: temp, mode: 0o600, syncDirectory: true)
        } catch {
            throw .io(path: error.name.map { directory + "/" + $0 } ?? directory, operation: error.operation, errno: error.errno)
        }
    }
}
