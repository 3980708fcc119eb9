import Glibc
import BLEWire

/// One file of an application's state directory (the restoration store, ...): read whole up
/// to a bound, written atomically, moved aside when it cannot be used. The directory must be
/// a real directory of this user's (not a symbolic link, not another user's); it is created
/// (mode 0700, with its parents) by the first write only, so a read-only home loses nothing
/// but the file. The file is reached through the directory's descriptor, never through a
/// link (O_NOFOLLOW), and a temporary file is always a new one (O_EXCL).
///
///     let file = StateFile(directory: "/var/lib/app", name: "restoration")
///     try file.write(bytes)                       // the old file or the new one, even after a crash
///     let back = try file.read(atMost: 65_537)    // nil when there is none
package struct StateFile: Sendable {
    package let directory: String
    package let name: String

    package init(directory: String, name: String) {
        self.directory = directory
        self.name = name
    }

    /// `directory/name`.
    package var path: String { directory + "/" + name }

    /// The file's bytes, nil when there is no file (or no directory). Reads at most `limit`
    /// bytes: pass one more than the largest size accepted to tell a file that is too large.
    package func read(atMost limit: Int) throws(StateFileError) -> [UInt8]? {
        guard let dir = try openDirectory(creating: false) else { return nil }
        defer { close(dir) }
        do {
            return try OwnDirectory.read(name, in: dir, atMost: limit)
        } catch {
            throw .io(path: path, operation: error.call, errno: error.errno)
        }
    }

    /// Writes `bytes` to a new temporary file next to the file (mode 0600), syncs it, renames
    /// it over the file and syncs the directory: after a crash the file is the old one or the
    /// new one, and once this returns it is on disk.
    package func write(_ bytes: [UInt8]) throws(StateFileError) {
        guard let dir = try openDirectory(creating: true) else { throw .io(path: directory, operation: "opening directory", errno: ENOENT) }
        defer { close(dir) }
        let temp = ".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        do {
            try AtomicFile.replace(name, in: dir, with: bytes, temporaryName: temp, mode: 0o600, syncDirectory: true)
        } catch {
            throw .io(path: error.name.map { directory + "/" + $0 } ?? directory, operation: error.operation, errno: error.errno)
        }
    }

    /// Renames the file to `name.<suffix>` (`name.<suffix>.2`, ... when that exists), so that
    /// nothing is lost when it cannot be used, and returns the new path.
    package func moveAside(suffix: String) throws(StateFileError) -> String {
        guard let dir = try openDirectory(creating: false) else { throw .io(path: path, operation: "moving aside", errno: ENOENT) }
        defer { close(dir) }
        for n in 1...100 {
            let aside = name + "." + suffix + (n == 1 ? "" : ".\(n)")
            // renameat2(RENAME_NOREPLACE) is not in every libc; link + unlink never replaces either.
            if linkat(dir, name, dir, aside, 0) == 0 {
                unlinkat(dir, name, 0)
                return directory + "/" + aside
            }
            if errno != EEXIST { throw .io(path: path, operation: "moving aside to \(aside)", errno: errno) }
        }
        throw .io(path: path, operation: "moving aside (100 names in use)", errno: EEXIST)
    }

    /// Removes the file, when there is one.
    package func remove() throws(StateFileError) {
        guard let dir = try openDirectory(creating: false) else { return }
        defer { close(dir) }
        if unlinkat(dir, name, 0) != 0 && errno != ENOENT { throw .io(path: path, operation: "removing", errno: errno) }
    }

    /// The directory, open; with `creating`, made first (mode 0700, with its parents); nil
    /// when it does not exist and `creating` is false.
    private func openDirectory(creating: Bool) throws(StateFileError) -> Int32? {
        if creating {
            var current = directory.hasPrefix("/") ? "" : "."
            for part in directory.split(separator: "/") {
                current += "/" + part
                if mkdir(current, 0o700) != 0 && errno != EEXIST { throw .io(path: current, operation: "creating directory", errno: errno) }
            }
        }
        do {
            return try OwnDirectory.open(directory, at: AT_FDCWD)
        } catch {
            switch error {
            case .failed(_, ENOENT) where !creating:
                return nil
            case .failed(let operation, let e):
                throw .io(path: directory, operation: operation, errno: e)
            case .symbolicLink, .notADirectory:
                throw .unsafeDirectory(path: directory, detail: "a symbolic link or not a directory")
            case .ownedByAnotherUser(let owner, let user):
                throw .unsafeDirectory(path: directory, detail: "owned by uid \(owner), not \(user)")
            }
        }
    }
}

/// Why a `StateFile` could not be read or written: the path, the call and its errno, or a
/// directory that is not safe to use.
package enum StateFileError: Error, Sendable, Equatable, CustomStringConvertible {
    case io(path: String, operation: String, errno: Int32)
    case unsafeDirectory(path: String, detail: String)

    package var description: String {
        switch self {
        case .io(let path, let operation, let code):
            return "\(operation) \(path) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .unsafeDirectory(let path, let detail):
            return "directory \(path) is not used: \(detail)"
        }
    }
}
