#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// Reads a capture for `ble decode` from any path a user may give: a regular file, a FIFO or
/// process substitution (`<(adb shell cat ...)`), a device file. Bounded: a file larger than
/// `limit` is refused, and input that does not start with the btsnoop magic is refused after
/// its first 8 bytes, so `/dev/zero` or a terminal does not fill memory.
enum CaptureFile {
    static func read(_ path: String, limit: Int) throws(CLIFailure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { throw CLIFailure("cannot read \(path): no such file; give the path of a btsnoop capture") }
            throw CLIFailure("cannot read \(path): \(String(cString: strerror(e))) (errno \(e)); give the path of a btsnoop capture")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            throw CLIFailure("cannot read \(path): fstat failed with errno \(e)")
        }
        if st.st_mode & S_IFMT == S_IFDIR {
            throw CLIFailure("cannot read \(path): it is a directory; give the path of a btsnoop capture")
        }
        if st.st_mode & S_IFMT == S_IFREG, st.st_size > limit {
            throw CLIFailure("\(path) is \(st.st_size) bytes, more than the \(limit) bytes 'ble decode' reads; split it with 'editcap -c'")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            // The magic first: 8 bytes, then whole chunks.
            let want = bytes.count < 8 ? 8 - bytes.count : chunk.count
            let read: Int?
            do {
                read = try chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemCallError) in try FileDescriptorIO.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<want])) }
                }.get()
            } catch {
                throw CLIFailure("cannot read \(path): \(error.reason) (errno \(error.errno))")
            }
            guard let n = read else {
                throw CLIFailure("cannot read \(path): it is non-blocking and has nothing to read now (EAGAIN); give a file or a blocking pipe")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count == 8, bytes != Array("btsnoop\0".utf8) {
                throw CLIFailure("\(path) is not a btsnoop capture: it does not start with the \"btsnoop\" magic")
            }
            if bytes.count > limit {
                throw CLIFailure("\(path) gives more than the \(limit) bytes 'ble decode' reads; split the capture with 'editcap -c'")
            }
        }
        return bytes
    }
}
