#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file in a directory in one step: the bytes go to a new temporary file
/// (O_CREAT | O_EXCL | O_NOFOLLOW, `mode`), which is synced and renamed over the file, so after
/// a crash the file is the old one or the new one. With `syncDirectory` the directory is
/// synced too, so the new file is on disk once this returns.
///
///     try AtomicFile.replace("peer.json", in: directoryFD, with: bytes, temporaryName: ".peer.json.tmp")
package enum AtomicFile {
    package static func replace(
        _ name: String, in directory: Int32, with bytes: [UInt8], temporaryName temp: String,
        mode: mode_t = 0o600, syncDirectory: Bool = false
    ) throws(AtomicFileError) {
        let fd = openat(directory, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw AtomicFileError(operation: "creating", name: temp, errno: errno) }
        func fail(_ operation: String, _ err: Int32) -> AtomicFileError {
            close(fd)
            unlinkat(directory, temp, 0)
            return AtomicFileError(operation: operation, name: temp, errno: err)
        }
        do {
            try FileDescriptorIO.writeAll(fd, bytes)
        } catch {
            throw fail("writing", error.errno)
        }
        // O_CREAT's mode passes through the umask, which can only narrow it; set it exactly.
        if fchmod(fd, mode) != 0 { throw fail("chmod 0\(String(mode, radix: 8))", errno) }
        if fsync(fd) != 0 { throw fail("syncing", errno) }
        close(fd)
        if renameat(directory, temp, directory, name) != 0 {
            let err = errno
            unlinkat(directory, temp, 0)
            throw AtomicFileError(operation: "renaming \(temp) to", name: name, errno: err)
        }
        // The rename is durable only once the directory is synced.
        if syncDirectory, fsync(directory) != 0 {
            throw AtomicFileError(operation: "syncing directory", name: nil, errno: errno)
        }
    }
}

/// A step of `AtomicFile.replace` that failed: what it did, to which file and its errno.
package struct AtomicFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// "creating", "writing", "chmod 0600", "syncing", "renaming TEMP to", "syncing directory".
    package let operation: String
    /// The file, relative to the directory: the temporary one, or the target for a rename;
    /// nil for the directory itself.
    package let name: String?
    package let errno: Int32

    package init(operation: String, name: String?, errno: Int32) {
        self.operation = operation
        self.name = name
        self.errno = errno
    }

    /// The C library's text for `errno`, "No space left on device".
    package var reason: String { String(cString: strerror(errno)) }
    package var description: String { "\(operation) \(name ?? "the directory") failed: \(reason) (errno \(errno))" }
}
