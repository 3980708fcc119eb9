import BLETestSupport
import Foundation
import Testing

/// Commands that only read bonds create nothing in the bond directory (a read-only home runs
/// them); `--own-address static` keeps the adapter's static address there, made once.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CLIBondDirectoryTests {
    static let battery = "F0:5E:B1:00:00:03"

    @Test func scanAndReadCreateNoBondDirectory() async throws {
        let radio = FakeRadio([FakePeers.battery()])
        defer { radio.close() }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("ble-home-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let bonds = home.appendingPathComponent("state/swift-ble-host/bonds").path
        let scan = try await radio.run(["--bond-dir", bonds, "scan", "--json", "--duration", "1"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(try BLETool.jsonLines(scan).contains { $0["address"] as? String == Self.battery })
        let read = try await radio.run(["--bond-dir", bonds, "read", Self.battery, "-c", "2A19"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home.path), "nothing created under \(home.path)")
    }

    @Test func staticOwnAddressIsMadeOnceAndKept() async throws {
        let radio = FakeRadio([FakePeers.battery()])
        defer { radio.close() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try await radio.run(["--bond-dir", dir.path, "scan", "--json", "--duration", "1", "--own-address", "static"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try BLETool.jsonLines(first).contains { $0["address"] as? String == Self.battery })
        // The fake's controller is 00:1B:DC:0F:00:01 (FakeCentral's default address).
        let file = dir.appendingPathComponent("00:1B:DC:0F:00:01/own-static-address").path
        let address = try String(contentsOfFile: file, encoding: .utf8)
        // Static random: the two most significant bits set (Vol 6, Part B, 1.3.2.1).
        let top = try #require(UInt8(address.prefix(2), radix: 16))
        #expect(top & 0xC0 == 0xC0, "\(address)")
        let second = try await radio.run(["--bond-dir", dir.path, "scan", "--json", "--duration", "1", "--own-address", "static"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == address)
    }
}
