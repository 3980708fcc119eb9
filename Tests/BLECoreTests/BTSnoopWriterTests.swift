@testable import BLECore
@testable import BLETransport
import Dispatch
import Foundation
import Synchronization
import Testing
import BLEWire

/// The btsnoop writer: bounded behind a slow disk (records dropped and counted in the
/// capture's cumulative drops field), whole records or a clean stop when write(2) fails, and
/// no symbolic link followed when it opens its file.
@Suite struct BTSnoopWriterTests {
    static func tempPath(_ name: String = "w.btsnoop") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("btsnoop-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent(name).path
    }

    /// HCI_Reset (Vol 4, Part E, 7.3.2): H4 01 03 0C 00, a 28-byte record with its 24-byte header.
    static let reset = HCIPacket.command(HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C03), parameters: []))

    final class Warnings: Sendable {
        let lines = Mutex<[String]>([])
        var logger: BLELogger { BLELogger(minimumLevel: .warning) { record in self.lines.withLock { $0.append(record.message) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// A writer whose queue is suspended (a disk that does not keep up) keeps at most
    /// `maximumPendingBytes` waiting: 16 header bytes + 3 records of 28 bytes fit in 100,
    /// the other 7 are dropped; a record written later carries the 7 drops.
    @Test func boundedBehindASlowDiskWithCountedDrops() throws {
        let path = try Self.tempPath()
        let queue = DispatchQueue(label: "test.btsnoop-writer")
        queue.suspend()
        let warnings = Warnings()
        let writer = try BTSnoopWriter(path: path, maximumPendingBytes: 100, logger: warnings.logger, queue: queue,
                                       write: { Glibc.write($0, $1, $2) })
        for _ in 0..<10 { writer.write(Self.reset, direction: .sent) }
        #expect(writer.droppedRecords == 7)
        #expect(warnings.all.count == 1)
        queue.resume()
        #expect(writer.progress.writtenRecords == 3)   // waits for the queue to drain
        writer.write(Self.reset, direction: .sent)
        #expect(writer.progress.writtenRecords == 4)
        writer.close()

        let capture = try BTSnoopReader(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(capture.records.count == 4)
        #expect(capture.records.map(\.drops) == [0, 0, 0, 7])
        #expect(capture.trailingError == nil)
    }

    /// A slow sink that takes at most 5 bytes per write(2), behind a suspended queue and a
    /// bound of 100 bytes: 7 of 10 records are dropped and counted, and every record still
    /// reaches the file whole, each in several calls (16-byte header: 4 calls; 28-byte
    /// records: 6 calls each).
    @Test func aSinkThatTakesFewBytesPerWriteStillGetsWholeRecords() throws {
        let path = try Self.tempPath()
        let queue = DispatchQueue(label: "test.btsnoop-writer")
        queue.suspend()
        let calls = Counter()
        let writer = try BTSnoopWriter(path: path, maximumPendingBytes: 100, logger: .silent, queue: queue) { fd, buf, count in
            calls.value.add(1, ordering: .relaxed)
            return Glibc.write(fd, buf, min(count, 5))
        }
        for _ in 0..<10 { writer.write(Self.reset, direction: .sent) }
        #expect(writer.droppedRecords == 7)
        queue.resume()
        #expect(writer.progress.writtenRecords == 3)   // waits for the queue to drain
        writer.write(Self.reset, direction: .sent)
        #expect(writer.progress.writtenRecords == 4)
        writer.close()
        #expect(calls.value.load(ordering: .relaxed) == 4 + 4 * 6)

        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count == 16 + 4 * 28)
        let capture = try BTSnoopReader(bytes: bytes)
        #expect(capture.records.map(\.drops) == [0, 0, 0, 7])
        #expect(capture.records.map(\.packet) == Array(repeating: Self.reset, count: 4))
        #expect(capture.trailingError == nil)
    }

    /// write(2) fails after half a record (ENOSPC): the file is cut back to the last whole
    /// record, the writer stops with a warning, later records are not written.
    @Test func failedWriteLeavesWholeRecordsAndStops() throws {
        let path = try Self.tempPath()
        let calls = Counter()
        let warnings = Warnings()
        // Call 1 writes the header, 2 and 3 two whole records, 4 writes 10 bytes, 5 fails.
        let writer = try BTSnoopWriter(path: path, maximumPendingBytes: 1 << 20, logger: warnings.logger,
                                       queue: DispatchQueue(label: "test.btsnoop-writer")) { fd, buf, count in
            switch calls.value.add(1, ordering: .relaxed).newValue {
            case 4: return Glibc.write(fd, buf, min(count, 10))
            case 5: errno = ENOSPC; return -1
            default: return Glibc.write(fd, buf, count)
            }
        }
        for _ in 0..<4 { writer.write(Self.reset, direction: .received) }
        let progress = writer.progress
        #expect(progress.writtenRecords == 2)
        #expect(progress.stopReason?.contains("No space left on device") == true, "\(progress.stopReason ?? "")")
        #expect(warnings.all.contains { $0.contains("stopped") && $0.contains(path) })
        writer.write(Self.reset, direction: .received)
        writer.close()
        #expect(calls.value.load(ordering: .relaxed) == 5)

        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count == 16 + 2 * 28)
        let capture = try BTSnoopReader(bytes: bytes)
        #expect(capture.records.count == 2)
        #expect(capture.trailingError == nil)
    }

    /// A symbolic link at the path is refused (O_NOFOLLOW, ELOOP) and its target is untouched.
    @Test func symbolicLinkIsNotFollowed() throws {
        let target = try Self.tempPath("target")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: target))
        let link = (target as NSString).deletingLastPathComponent + "/link.btsnoop"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(throws: TransportError.system(operation: "open btsnoop file (it is a symbolic link, which is not followed)", endpoint: link, errno: ELOOP)) {
            _ = try BTSnoopWriter(path: link)
        }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep me")
    }

    /// A FIFO or a device is not a capture file: refused at once, without blocking.
    @Test func nonRegularFilesAreRefused() throws {
        let fifo = try Self.tempPath("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: TransportError.self) { _ = try BTSnoopWriter(path: fifo) }
        #expect(throws: TransportError.system(operation: "open btsnoop file (not a regular file; give a file path)", endpoint: "/dev/null", errno: EINVAL)) {
            _ = try BTSnoopWriter(path: "/dev/null")
        }
    }
}
