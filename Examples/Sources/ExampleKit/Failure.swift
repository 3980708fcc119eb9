#if canImport(Glibc)
import Glibc
#endif

/// Writes `message` and a newline to standard error and exits with status 1.
public func exitWithError(_ message: String) -> Never {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
