import Foundation

/// A fresh directory under /tmp for the files of one test, and its removal with what it holds.
///
///     let root = try TemporaryDirectory.make("bonds")
///     defer { TemporaryDirectory.remove(root) }
package enum TemporaryDirectory {
    /// mkdtemp(3) refused the template.
    package struct Failure: Error, CustomStringConvertible {
        package let template: String
        package let errno: Int32
        package var description: String {
            "cannot make a temporary directory from \(template) (mkdtemp: errno \(errno)); check that /tmp exists and is writable"
        }
    }

    /// Makes `/tmp/ble-<label>-XXXXXX` with mode 0700 and returns its path.
    package static func make(_ label: String) throws(Failure) -> String {
        let template = "/tmp/ble-\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = bytes.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw Failure(template: template, errno: errno)
        }
        return String(cString: made)
    }

    /// Removes `path` and everything below it; a path that is already gone is fine.
    package static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Runs `body` on a fresh directory, removed afterwards whether `body` threw or not.
    package static func with<T>(_ label: String, _ body: (String) throws -> T) throws -> T {
        let root = try make(label)
        defer { remove(root) }
        return try body(root)
    }
}
