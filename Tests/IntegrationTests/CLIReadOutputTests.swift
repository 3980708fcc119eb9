import BLETestSupport
import Foundation
import Testing
import GATTClient

/// `ble read --raw` and `--out FILE`, and Appearance decoded by name in `inspect`, against a
/// fake of the heart-rate scenario's monitor (`FakePeers.heartRateMonitor`): Body Sensor Location 0x01,
/// Appearance 833 = 0x0341, "Heart Rate Sensor: Heart Rate Belt" (Assigned Numbers 2.6.3).
@Suite(.serialized) struct CLIReadOutputTests {
    @Test func rawBytesOutFileAndAppearance() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor()])
        defer { radio.close() }
        let hrm = "F0:5E:B1:00:00:01"
        let raw = try await radio.run(["read", hrm, "-c", "2A38", "--raw"])
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(Array(raw.stdout.utf8) == [0x01])

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("read-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("appearance.bin")
        let out = try await radio.run(["read", hrm, "-c", "2A01", "--out", file.path])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(try Data(contentsOf: file) == Data([0x41, 0x03]))
        #expect(out.stdout == "0x4103 (2 bytes, uint 833) -> Heart Rate Sensor: Heart Rate Belt\n")

        let both = try await BLETool.run(["read", hrm, "-c", "2A01", "--raw", "--json"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("give --raw or --json, not both"))

        let inspect = try await radio.run(["inspect", hrm, "--read"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("2A01 - Appearance  [read] = 0x4103 (2 bytes, uint 833) -> Heart Rate Sensor: Heart Rate Belt"), "\(inspect.stdout)")
    }
}
