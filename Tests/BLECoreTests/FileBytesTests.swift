import BLECore
import Foundation
import Testing
import BLETransport

/// `FileBytes.read`: a whole small file, at most the bound of a large one, and errno with the
/// call that failed for a missing file and for a directory.
@Suite struct FileBytesTests {
    @Test func readsUpToTheBound() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("filebytes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }
        try Data(content).write(to: file)
        #expect(try FileBytes.read(file.path, atMost: 1_000_000) == content)
        #expect(try FileBytes.read(file.path, atMost: 200_000) == content)
        #expect(try FileBytes.read(file.path, atMost: 70_001) == Array(content[..<70_001]))
        #expect(try FileBytes.read(file.path, atMost: 0) == [])
    }

    @Test func failuresNameTheCallAndErrno() {
        #expect {
            try FileBytes.read("/nonexistent/file", atMost: 10)
        } throws: { error in
            let e = error as? FileReadError
            return e?.operation == "open" && e?.errno == ENOENT && e?.description == "cannot open /nonexistent/file: No such file or directory (errno 2)"
        }
        #expect {
            try FileBytes.read("/", atMost: 10)
        } throws: { error in
            let e = error as? FileReadError
            return e?.operation == "read" && e?.errno == EISDIR
        }
    }
}
