import BLETransport
import Foundation
import Testing

/// `FileDescriptorIO` and `AtomicFile`, the package's one edge for read/write loops: bounded
/// reads, whole writes through a pipe, "would block" as nil, errno with the call's name, and
/// a replaced file that is the new one with mode 0600 and no temporary file left.
@Suite struct FileDescriptorIOTests {
    /// A pipe whose two ends are closed after `body`.
    private func withPipe(nonBlockingRead: Bool = false, _ body: (_ read: Int32, _ write: Int32) throws -> Void) throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        if nonBlockingRead { _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) }
        try body(fds[0], fds[1])
    }

    @Test func writeAllThenReadAllUpToTheBound() throws {
        try withPipe { r, w in
            let content = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try FileDescriptorIO.writeAll(w, content)
            close(w)
            #expect(try FileDescriptorIO.readAll(r, atMost: 30_001) == Array(content[..<30_001]))
            #expect(try FileDescriptorIO.readAll(r, atMost: 1_000_000) == Array(content[30_001...]))
            // End of file: nothing more, and no error.
            #expect(try FileDescriptorIO.readAll(r, atMost: 10) == [])
        }
    }

    @Test func anEmptyNonBlockingPipeWouldBlock() throws {
        try withPipe(nonBlockingRead: true) { r, w in
            #expect(try FileDescriptorIO.read(r, upTo: 16) == nil)
            try FileDescriptorIO.writeAll(w, [0x01, 0x02, 0x03])
            #expect(try FileDescriptorIO.read(r, upTo: 2) == [0x01, 0x02])
            #expect(try FileDescriptorIO.read(r, upTo: 16) == [0x03])
            close(w)
            #expect(try FileDescriptorIO.read(r, upTo: 16) == [])
        }
    }

    @Test func failuresNameTheCallAndErrno() throws {
        #expect(throws: SystemCallError("read", errno: EBADF)) { try FileDescriptorIO.readAll(-1, atMost: 4) }
        #expect(throws: SystemCallError("write", errno: EBADF)) { try FileDescriptorIO.writeAll(-1, [0x00]) }
        #expect(SystemCallError("write", errno: EPIPE).description == "write failed: Broken pipe (errno 32)")
        // A read end that gets a write: EBADF from write(2).
        try withPipe { r, _ in
            #expect(throws: SystemCallError("write", errno: EBADF)) { try FileDescriptorIO.writeAll(r, [0x00]) }
        }
    }

    @Test func atomicReplaceLeavesTheNewFileWithItsMode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = open(path, O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        defer { close(directory) }

        try AtomicFile.replace("value", in: directory, with: Array("old".utf8), temporaryName: ".value.1.tmp", syncDirectory: true)
        try AtomicFile.replace("value", in: directory, with: Array("new".utf8), temporaryName: ".value.2.tmp", syncDirectory: true)
        #expect(FileManager.default.contents(atPath: path + "/value") == Data("new".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["value"])
        var st = stat()
        #expect(stat(path + "/value", &st) == 0 && st.st_mode & 0o777 == 0o600)

        // A temporary name that exists already (planted by someone else) is never written through.
        #expect(FileManager.default.createFile(atPath: path + "/.value.3.tmp", contents: Data("planted".utf8)))
        #expect(throws: AtomicFileError(operation: "creating", name: ".value.3.tmp", errno: EEXIST)) {
            try AtomicFile.replace("value", in: directory, with: Array("newer".utf8), temporaryName: ".value.3.tmp")
        }
        #expect(FileManager.default.contents(atPath: path + "/value") == Data("new".utf8))
        #expect(FileManager.default.contents(atPath: path + "/.value.3.tmp") == Data("planted".utf8))
    }
}
