import Glibc
import BLEWire

/// Reads a file the tool or the gateway is given (a config, a payload, a password) whole, up
/// to a bound: a wrong path to a large file costs at most `limit` bytes. Pass one byte more
/// than the largest size you accept to tell "too large" from "exactly the limit".
///
///     let bytes = try FileBytes.read("/etc/ble-gateway.json", atMost: 1_048_577)
package enum FileBytes {
    package static func read(_ path: String, atMost limit: Int) throws(FileReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileReadError(path: path, operation: "open", errno: errno) }
        defer { _ = close(fd) }
        do {
            return try FileDescriptorIO.readAll(fd, atMost: limit)
        } catch {
            throw FileReadError(path: path, operation: "read", errno: error.errno)
        }
    }
}

/// A file that could not be opened or read: the path, the call and its errno.
package struct FileReadError: Error, Sendable, CustomStringConvertible {
    package let path: String
    /// "open" or "read".
    package let operation: String
    package let errno: Int32

    /// The C library's text for `errno`, "No such file or directory".
    package var reason: String { String(cString: strerror(errno)) }
    package var description: String { "cannot \(operation) \(path): \(reason) (errno \(errno))" }
}
