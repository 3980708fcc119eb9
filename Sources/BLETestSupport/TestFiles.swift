#if canImport(Glibc)
import Glibc
#endif

/// What a test looks at in the files a store wrote: the names in a directory, a file's mode.
///
///     #expect(TestFiles.names(in: root + "/state") == ["hall"])
///     #expect(TestFiles.mode(root + "/state/hall") == 0o600)
package enum TestFiles {
    /// The entries of the directory at `path`, sorted, without "." and ".." (none when it cannot be opened).
    package static func names(in path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The permission bits of `path` (0 when it cannot be stat'ed).
    package static func mode(_ path: String) -> UInt32 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt32(st.st_mode) & 0o777 : 0
    }
}
