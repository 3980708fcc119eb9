#if canImport(Glibc)
import Glibc
#endif

/// The one way the state stores (bonds, restoration, caches) open a directory and read a file
/// in it: the directory must be a real directory of this user's, and a file in it is reached
/// through its descriptor, never through a symbolic link (O_NOFOLLOW), and read up to a bound.
///
///     let dir = try OwnDirectory.open("/var/lib/app", at: AT_FDCWD)
///     defer { close(dir) }
///     let bytes = try OwnDirectory.read("state", in: dir, atMost: 65_537)   // nil when absent
package enum OwnDirectory {
    /// Why a directory was not opened.
    package enum Refusal: Error, Sendable, Equatable {
        /// The name is a symbolic link (O_NOFOLLOW).
        case symbolicLink
        /// The name is not a directory.
        case notADirectory
        /// The directory belongs to `owner`, not to this process's user.
        case ownedByAnotherUser(owner: uid_t, user: uid_t)
        /// A call failed: openat ("opening directory") or fstat ("checking directory").
        case failed(operation: String, errno: Int32)
    }

    /// Opens `name` (relative to `directory`, or a path with `AT_FDCWD`) as a directory of
    /// this user's: its descriptor, which the caller closes.
    package static func open(_ name: String, at directory: Int32) throws(Refusal) -> Int32 {
        let fd = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ELOOP || e == ENOTDIR {
                // Linux answers ENOTDIR for a link to a directory opened with O_DIRECTORY | O_NOFOLLOW.
                var st = stat()
                let isLink = fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mode & S_IFMT == S_IFLNK
                throw isLink ? .symbolicLink : .notADirectory
            }
            throw .failed(operation: "opening directory", errno: e)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw .failed(operation: "checking directory", errno: e)
        }
        guard st.st_uid == geteuid() else {
            close(fd)
            throw .ownedByAnotherUser(owner: st.st_uid, user: geteuid())
        }
        return fd
    }

    /// The bytes of file `name` in the open directory `directory` (not through a symbolic
    /// link), at most `limit` of them: nil when there is no such file. Pass one more than the
    /// largest size accepted to tell a file that is too large. The error names the call:
    /// "opening" or "reading".
    package static func read(_ name: String, in directory: Int32, atMost limit: Int) throws(SystemCallError) -> [UInt8]? {
        let fd = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemCallError("opening", errno: errno)
        }
        defer { close(fd) }
        do {
            return try FileDescriptorIO.readAll(fd, atMost: limit)
        } catch {
            throw SystemCallError("reading", errno: error.errno)
        }
    }
}
