import Foundation
import Testing
import BLETestSupport

/// The peers of Fixtures/peers/scenarios/security-cli.json and what they saw: each serves its
/// security log (5EC00010), one line per pairing or encryption of its links
/// (Fixtures/peers/peer_security.py). A test reads it with `ble read` in a new process once
/// the commands under test are done; with a bond that read encrypts with the stored key
/// first, so its own link is the log's last line.
struct CLISecurityPeer {
    static let encrypted = "5EC00002-0000-1000-8000-00805F9B34FB"
    static let open = "5EC00003-0000-1000-8000-00805F9B34FB"
    static let authenticated = "5EC00006-0000-1000-8000-00805F9B34FB"
    static let log = "5EC00010-0000-1000-8000-00805F9B34FB"
    static let writable = "5EC00011-0000-1000-8000-00805F9B34FB"

    let radio: VirtualRadio
    let directory: URL
    /// `-d TRANSPORT --bond-dir DIR`.
    var d: [String] { ["-d", radio.transportSpec, "--bond-dir", directory.path] }

    /// Runs `body` with a fresh radio of security-cli.json and an empty bond directory.
    static func with(_ body: (CLISecurityPeer) async throws -> Void) async throws {
        let dir = try CLIPairRadioTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try await VirtualRadio.with(scenario: "security-cli") { radio in
            try await body(CLISecurityPeer(radio: radio, directory: dir))
        }
    }

    func address(_ id: String) throws -> String { try #require(radio.device(id)).address }

    /// Runs `ble -d ... --bond-dir ... arguments`.
    func run(_ arguments: [String]) async throws -> BLETool.Run { try await BLETool.run(d + arguments) }

    /// The security log of device `id`, line by line.
    func log(_ id: String) async throws -> [String] {
        let read = try await run(["read", try address(id), "-c", Self.log, "--raw"])
        #expect(read.status == 0, "\(read.stderr)\n\(radio.recentLog)")
        return read.stdout.split(separator: "\n").map(String.init)
    }

    /// Reads `characteristic` of device `id` in a new process and expects `value` (UTF-8).
    func expectRead(_ id: String, _ characteristic: String, _ value: String) async throws {
        let read = try await run(["read", try address(id), "-c", characteristic, "--raw"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == value)
    }

    /// The bond files in the adapter's directory.
    func bondFiles() throws -> [String] {
        let adapters = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return try adapters.flatMap { a in
            try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(a).path).map { "\(a)/\($0)" }
        }
    }
}
