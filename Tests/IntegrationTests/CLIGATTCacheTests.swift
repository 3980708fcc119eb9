import BLETestSupport
import Foundation
import Testing

/// `ble read` keeps the device's database in the GATT cache directory and the next run skips
/// discovery (the capture of the second run has no Read By Group Type Request, ATT opcode
/// 0x10, Vol 3, Part F, 3.4.4.9); `--no-cache` discovers and writes nothing.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CLIGATTCacheTests {
    static let battery = "F0:5E:B1:00:00:03"

    /// How many Read By Group Type Requests the capture at `path` holds.
    static func groupTypeRequests(_ path: String) async throws -> Int {
        let decoded = try await BLETool.run(["decode", "--json", path])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        return try BLETool.jsonLines(decoded).filter { $0["attOpcode"] as? Int == 0x10 }.count
    }

    /// `ble -d <the fake> arguments` with the cache in `cache`.
    static func run(_ radio: FakeRadio, _ cache: String, _ arguments: [String]) async throws -> BLETool.Run {
        try await BLETool.run(["-d", try radio.fake.servePseudoTerminal()] + arguments, environment: ["BLE_GATT_CACHE_DIR": cache])
    }

    @Test func theSecondReadSkipsDiscovery() async throws {
        let radio = FakeRadio([FakePeers.battery()])
        defer { radio.close() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = dir.appendingPathComponent("cache").path
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)

        let first = try await Self.run(radio, cache, ["--btsnoop", dir.appendingPathComponent("first.btsnoop").path, "read", Self.battery, "-c", "2A19", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache) == ["F0:5E:B1:00:00:03-random"])
        #expect(try await Self.groupTypeRequests(dir.appendingPathComponent("first.btsnoop").path) > 0)

        let second = try await Self.run(radio, cache, ["--btsnoop", dir.appendingPathComponent("second.btsnoop").path, "read", Self.battery, "-c", "2A19", "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == first.stdout)
        #expect(try await Self.groupTypeRequests(dir.appendingPathComponent("second.btsnoop").path) == 0)

        let bypass = try await Self.run(radio, cache, ["--btsnoop", dir.appendingPathComponent("third.btsnoop").path, "read", Self.battery, "-c", "2A19", "--json", "--no-cache"])
        #expect(bypass.status == 0, "\(bypass.stderr)")
        #expect(try await Self.groupTypeRequests(dir.appendingPathComponent("third.btsnoop").path) > 0)
    }

    @Test func noCacheWritesNothing() async throws {
        let radio = FakeRadio([FakePeers.battery()])
        defer { radio.close() }
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let run = try await Self.run(radio, cache, ["read", Self.battery, "-c", "2A19", "--no-cache"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cache))
    }
}
