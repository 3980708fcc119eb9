#if canImport(Glibc)
import Glibc
#endif

/// The read, write and retry loops over raw descriptors, in one place for the whole package:
/// each retries EINTR, reports EAGAIN as "would block" (nil) and any other errno as a
/// `SystemCallError` naming the call.
///
///     let bytes = try FileDescriptorIO.readAll(fd, atMost: 65_537)
package enum FileDescriptorIO {
    /// Runs `call` (a C call returning -1 with errno on failure) again while a signal
    /// interrupts it: its result, nil for EAGAIN/EWOULDBLOCK, or the errno as an error.
    ///
    ///     let child = try FileDescriptorIO.retryingInterrupts("accept") { Int(accept(fd, nil, nil)) }
    package static func retryingInterrupts(_ name: String, _ call: () -> Int) throws(SystemCallError) -> Int? {
        while true {
            let result = call()
            if result >= 0 { return result }
            let err = errno
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return nil }
            throw SystemCallError(name, errno: err)
        }
    }

    /// One read into `buffer`: the count read (0 at end of file), nil when a non-blocking
    /// descriptor has nothing now.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int? {
        try retryingInterrupts("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// One read of at most `count` bytes: empty at end of file, nil when a non-blocking
    /// descriptor has nothing now.
    package static func read(_ fd: Int32, upTo count: Int) throws(SystemCallError) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        let n = try buffer.withUnsafeMutableBytes { raw in Result { () throws(SystemCallError) in try read(fd, into: raw) } }.get()
        guard let n else { return nil }
        buffer.removeSubrange(n...)
        return buffer
    }

    /// Reads a blocking descriptor until end of file or `limit` bytes, whichever comes first.
    /// Pass one byte more than the largest size you accept to tell "too large" from "exactly
    /// the limit".
    package static func readAll(_ fd: Int32, atMost limit: Int) throws(SystemCallError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(max(limit, 1), 1 << 16))
        while bytes.count < limit {
            let want = min(chunk.count, limit - bytes.count)
            let n = try chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemCallError) in try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<want])) }
            }.get()
            guard let n else { throw SystemCallError("read", errno: EAGAIN) }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    /// Writes every byte to a blocking descriptor; a short write continues where it stopped.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            let written = try bytes.withUnsafeBytes { raw in
                Result { () throws(SystemCallError) in
                    try retryingInterrupts("write") { Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) }
                }
            }.get()
            guard let written else { throw SystemCallError("write", errno: EAGAIN) }
            offset += written
        }
    }

    /// Waits for the child `pid` to end: its exit status, or 128 + the signal that ended it.
    package static func waitForExit(_ pid: pid_t) throws(SystemCallError) -> Int32 {
        var status: Int32 = 0
        _ = try retryingInterrupts("waitpid") { Int(waitpid(pid, &status, 0)) }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// A system call that failed: the call's name and its errno.
package struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C library's name of the call: "read", "write", "recv", "accept", "waitpid".
    package let call: String
    package let errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The C library's text for `errno`, "Broken pipe".
    package var reason: String { String(cString: strerror(errno)) }
    package var description: String { "\(call) failed: \(reason) (errno \(errno))" }
}
