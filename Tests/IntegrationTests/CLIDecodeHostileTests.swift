import BLETestSupport
import Foundation
import Testing

/// `ble decode` on captures that break assumptions: clocks that step back or sit at the ends
/// of the 64-bit range, zero-length and huge records, names with terminal escapes, a FIFO or a
/// device file as input, and every real capture in full. The captures are crafted here byte
/// by byte from the btsnoop layout (RFC 1761 record header, datalink 1002) and the HCI packet
/// layouts of the Core Specification (Vol 4, Part E, 5.4 and 7.7.65.2); see Fixtures/README.md.
@Suite struct CLIDecodeHostileTests {
    /// File header: "btsnoop\0", version 1, datalink 1002 (H4), big-endian.
    static let header: [UInt8] = Array("btsnoop\0".utf8) + [0, 0, 0, 1, 0, 0, 0x03, 0xEA]

    /// One record: original and included length, flags, drops, timestamp (all big-endian), data.
    static func record(_ data: [UInt8], flags: UInt32, timestamp: UInt64, includedLength: UInt32? = nil) -> [UInt8] {
        func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }
        let be64 = (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (56 - 8 * UInt64($0))) }
        return be32(UInt32(data.count)) + be32(includedLength ?? UInt32(data.count)) + be32(flags) + be32(0) + be64 + data
    }

    /// HCI_Reset (Vol 4, Part E, 7.3.2), H4 indicator 0x01, opcode 0x0C03, no parameters; flags 2 = sent command.
    static func reset(at timestamp: UInt64) -> [UInt8] { record([0x01, 0x03, 0x0C, 0x00], flags: 2, timestamp: timestamp) }

    static func write(_ bytes: [UInt8], name: String = "crafted.btsnoop") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-decode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// A phone's clock stepping back 1.5 s, then forward: times are signed offsets from the first record.
    @Test func clockSteppingBackShowsNegativeTimes() async throws {
        let t0: UInt64 = 0x00E2_5C1A_0000_0000
        let path = try Self.write(Self.header + Self.reset(at: t0) + Self.reset(at: t0 - 1_500_000) + Self.reset(at: t0 + 2_000_000))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty)
        #expect(run.stdoutLines == [
            "    1     0.000000 < CMD HCI_Reset (0x0C03) plen 0",
            "    2    -1.500000 < CMD HCI_Reset (0x0C03) plen 0",
            "    3     2.000000 < CMD HCI_Reset (0x0C03) plen 0",
        ])
        let json = try BLETool.jsonLines(try await BLETool.run(["decode", "--json", path]))
        #expect(json.map { $0["time"] as? Double } == [0, -1.5, 2])
    }

    /// Timestamps at both ends of the signed 64-bit range: the difference is 2^64 - 1 µs.
    @Test func timestampsAtTheEndsOfTheRange() async throws {
        let path = try Self.write(Self.header + Self.reset(at: 0x8000_0000_0000_0000) + Self.reset(at: 0x7FFF_FFFF_FFFF_FFFF) + Self.reset(at: 0))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(run.stdoutLines.map { $0.split(separator: " ")[1] } == ["0.000000", "18446744073709.551615", "9223372036854.775808"])
        let json = try await BLETool.run(["decode", "--json", path])
        #expect(json.status == 0)
        #expect(try BLETool.jsonLines(json).count == 3)
    }

    /// A zero-length record is an undecodable packet under its own number; the next one decodes.
    @Test func zeroLengthRecord() async throws {
        let path = try Self.write(Self.header + Self.reset(at: 1) + Self.record([], flags: 2, timestamp: 2) + Self.reset(at: 3))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(run.stdoutLines.count == 3)
        #expect(run.stdoutLines[1].hasPrefix("    2 undecodable packet ("))
        #expect(run.stdoutLines[2] == "    3     0.000002 < CMD HCI_Reset (0x0C03) plen 0")
    }

    /// A record header announcing 4 GiB with 4 bytes behind it ends the capture with a warning.
    @Test func recordLongerThanTheFile() async throws {
        let path = try Self.write(Self.header + Self.reset(at: 1) + Self.record([0x01, 0x03, 0x0C, 0x00], flags: 2, timestamp: 2, includedLength: 0xFFFF_FFFF))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(run.stdoutLines == ["    1     0.000000 < CMD HCI_Reset (0x0C03) plen 0"])
        #expect(run.stderr.contains("the capture ends with a cut record"))
    }

    /// An ACL packet of the largest size the header can give (Data_Total_Length 0xFFFF, Vol 4,
    /// Part E, 5.4.2): handle 0x0040, PB 0b00 (first non-flushable), carrying one L2CAP PDU
    /// (Vol 3, Part A, 3.1) of 65,531 bytes on the dynamic channel 0x0040.
    @Test func largestACLRecord() async throws {
        let acl: [UInt8] = [0x02, 0x40, 0x00, 0xFF, 0xFF, 0xFB, 0xFF, 0x40, 0x00] + [UInt8](repeating: 0xA5, count: 0xFFFB)
        let path = try Self.write(Self.header + Self.record(acl, flags: 1, timestamp: 5))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(run.stdoutLines.count == 1)
        #expect(run.stdoutLines == ["    1     0.000000 > ACL handle 0x0040 PB start len 65535 | L2CAP CID 0x0040 len 65531"])
    }

    /// An advertised Complete Local Name with ESC and BEL (a screen clear and a window title)
    /// is shown escaped as text and exact in JSON. LE Advertising Report (Vol 4, Part E,
    /// 7.7.65.2): one ADV_IND report from public address 11:22:33:44:55:66, RSSI -60.
    @Test func advertisedNameWithEscapesIsEscaped() async throws {
        let name = Array("\u{1B}[2J\u{1B}]0;evil\u{07}".utf8)
        let ad: [UInt8] = [0x02, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
        let params: [UInt8] = [0x02, 0x01, 0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, UInt8(ad.count)] + ad + [0xC4]
        let event: [UInt8] = [0x04, 0x3E, UInt8(params.count)] + params
        let path = try Self.write(Self.header + Self.record(event, flags: 3, timestamp: 9))
        let run = try await BLETool.run(["decode", path])
        #expect(run.status == 0)
        #expect(!run.stdout.utf8.contains(0x1B) && !run.stdout.utf8.contains(0x07))
        #expect(run.stdout.contains(#"name "\x1b[2J\x1b]0;evil\x07""#))
        let json = try BLETool.jsonLines(try await BLETool.run(["decode", "--json", path]))
        #expect((json.first?["summary"] as? String)?.contains("name \"\u{1B}[2J\u{1B}]0;evil\u{07}\"") == true)
    }

    /// A FIFO (as `<(adb shell cat ...)` gives) is read to its end like a file.
    @Test func fifoInput() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-fifo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let fifo = dir.appendingPathComponent("capture.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = try ChildProcess(path: "/bin/sh", ["-c", "cat \"$0\" > \"$1\"", CLIDecodeTests.capture, fifo])
        let written = Task { await writer.exitStatus(killingAfter: .seconds(60)) }
        let run = try await BLETool.run(["decode", fifo])
        #expect(await written.value == 0)
        #expect(run.status == 0)
        #expect(run.stdoutLines.count == 690)
    }

    /// Device files and a directory end with a clear error at once; /dev/zero is not read to
    /// the size limit (its first 8 bytes are not the magic).
    @Test(arguments: [("/dev/zero", "is not a btsnoop capture"), ("/dev/null", "is not a btsnoop capture"), ("/tmp", "is a directory"), ("/nonexistent/x.btsnoop", "cannot read /nonexistent/x.btsnoop: no such file")])
    func deviceFilesAndDirectories(_ path: String, _ message: String) async throws {
        let run = try await BLETool.run(["decode", path], timeout: 20)
        #expect(run.status == 1)
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    /// Every real capture decodes in full, text and JSON: one line per record (the record
    /// counts are tshark's, Fixtures/README.md), nothing on stderr.
    @Test(arguments: [("cnrd__yeelock", 690), ("crossnite__NovaX-Escooter", 2_939), ("csacca__horizon-74-at-ble", 2_572), ("phlash__blefun", 29_317)])
    func realCapturesInFull(_ name: String, _ records: Int) async throws {
        let path = BLETool.fixture("captures/real/\(name).btsnoop").path
        // The two runs are independent processes: side by side they use both cores.
        async let textRun = BLETool.run(["decode", path], timeout: 120)
        async let jsonRun = BLETool.run(["decode", "--json", path], timeout: 120)
        let (text, json) = try await (textRun, jsonRun)
        #expect(text.status == 0)
        #expect(text.stderr.isEmpty)
        #expect(text.stdoutLines.count == records)
        #expect(!text.stdout.contains("undecodable"))
        #expect(json.status == 0)
        #expect(try BLETool.jsonLines(json).count == records)
    }
}
