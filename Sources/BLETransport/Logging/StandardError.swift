#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// Unbuffered writes to fd 2, for `BLELogger.standardError`.
enum StandardError {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
