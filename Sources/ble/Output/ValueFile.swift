#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// The file of `ble read --out FILE`: created or truncated, values appended as they come.
/// Opened without following a symbolic link (the tool may run as root).
///
///     let file = try ValueFile(path: "value.bin"); try file.append(bytes); file.close()
final class ValueFile {
    let path: String
    private var fd: Int32

    init(path: String) throws(CLIFailure) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if fd < 0 {
            let e = errno
            throw CLIFailure("cannot write \(path): \(String(cString: strerror(e))) (errno \(e))\(e == ELOOP ? "; it is a symbolic link, which --out does not follow" : "")")
        }
    }

    func append(_ bytes: [UInt8]) throws(CLIFailure) {
        do {
            try FileDescriptorIO.writeAll(fd, bytes)
        } catch {
            throw CLIFailure("cannot write \(path): \(error.reason) (errno \(error.errno))")
        }
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd); fd = -1 }
    }

    deinit { close() }
}
