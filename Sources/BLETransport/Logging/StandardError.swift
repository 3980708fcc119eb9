#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// Unbuffered writes to fd 2, for `BLELogger.standardError`.
enum StandardError {
    static func write(_ text: String) {
        // A log line that cannot be written has nowhere else to go.
        try? FileDescriptorIO.writeAll(2, Array(text.utf8))
    }
}
