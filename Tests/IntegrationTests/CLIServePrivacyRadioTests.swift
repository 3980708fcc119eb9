import Foundation
import Testing
import BLECore
import BLETestSupport

/// `ble serve --own-address static|rpa` with Bumble's Security Manager as the central
/// (Fixtures/peers/pairing_central.py --any-advertiser): the set advertises from the adapter's
/// static random address (Vol 6, Part B, 1.3.2.1) or a resolvable private address of its
/// local IRK (1.3.2.2); pairing from that address passes Bumble's checks of the values that
/// take the responder's address (legacy c1 with its type, Vol 3, Part H, 2.2.3; Secure
/// Connections f5 and f6, 2.2.7 and 2.2.8); the IRK and identity address given in Identity
/// Information / Identity Address Information (3.6.4, 3.6.5) let Bumble resolve the address
/// when it connects again from the bond, and that link encrypts with the bond's key.
@Suite("ble serve own address", .serialized, .timeLimit(.minutes(3)))
struct CLIServePrivacyRadioTests {
    /// The two most significant bits of the address Bumble connected to ("C5:..." -> 0b11).
    static func topBits(_ address: String) throws -> UInt8 {
        try #require(UInt8(address.prefix(2), radix: 16)) >> 6
    }

    /// One pairing: the peer, its output, the server, the address Bumble connected to, and
    /// what Bumble kept.
    struct Paired {
        let peer: ResponderRadioTests.PairingCentral
        var lines: AsyncStream<String>.Iterator
        let server: CLIServePairingRadioTests.Server
        let address: String
        let keys: [String: Any]
        func stop() { peer.stop(); server.stop() }
    }

    /// Bumble connects to `ble serve --own-address own` and pairs (legacy or Secure Connections).
    static func pair(_ own: String, legacy: Bool, sc: Bool) async throws -> Paired {
        let peer = try await ResponderRadioTests.PairingCentral(["--io", "none", "--any-advertiser"] + (legacy ? ["--legacy"] : []))
        var lines = peer.lines.makeAsyncIterator()
        let server = try CLIServePairingRadioTests.Server(port: peer.port, ["--io", "no-io", "--own-address", own])
        var printed = server.lines.makeAsyncIterator()
        let connected = try await ResponderRadioTests.next("connected", in: &lines)
        let address = try #require(connected["address"] as? String)
        try peer.send(["pair": [String: Any]()])
        let paired = try await ResponderRadioTests.next("paired", in: &lines)
        #expect(paired["sc"] as? Bool == sc, "\(paired)")
        let line = try await CLIServePairingRadioTests.Server.next("paired ", in: &printed)
        #expect(line == "paired \(CLIServePairingRadioTests.central) encrypted, \(sc ? "Secure Connections" : "legacy"), bonded", "\(line)")
        return Paired(peer: peer, lines: lines, server: server, address: address, keys: paired)
    }

    @Test("static (legacy, Secure Connections): the static random address is the identity Bumble keeps; the next link encrypts from the bond", arguments: [true, false])
    func staticAddress(legacy: Bool) async throws {
        var p = try await Self.pair("static", legacy: legacy, sc: !legacy)
        defer { p.stop() }
        #expect(try Self.topBits(p.address) == 0b11, "\(p.address)")
        #expect((p.keys["identity"] as? String)?.hasPrefix(String(p.address.prefix(17))) == true, "\(p.keys)")
        #expect(p.keys["irk"] as? String != nil)
        try p.peer.send(["reconnect": [String: Any]()])
        _ = try await ResponderRadioTests.next("connected", in: &p.lines)
        try p.peer.send(["encrypt": [String: Any]()])
        _ = try await ResponderRadioTests.next("encrypted", in: &p.lines)
    }

    @Test("rpa (legacy, Secure Connections): Bumble pairs with a resolvable private address, resolves the advertiser with the IRK it got to the adapter's public identity, and encrypts from the bond", arguments: [true, false])
    func resolvablePrivateAddress(legacy: Bool) async throws {
        var p = try await Self.pair("rpa", legacy: legacy, sc: !legacy)
        defer { p.stop() }
        #expect(try Self.topBits(p.address) == 0b01, "\(p.address)")
        // The identity given for rpa is the controller's public address (the peer's host address).
        #expect((p.keys["identity"] as? String)?.hasPrefix(ResponderRadioTests.hostAddress) == true, "\(p.keys)")
        try p.peer.send(["resolve": [String: Any]()])
        let resolved = try await ResponderRadioTests.next("resolved", in: &p.lines)
        #expect(resolved["identity"] as? String == ResponderRadioTests.hostAddress)
        #expect((resolved["address"] as? String).map { p.address.hasPrefix($0) } == true, "\(resolved) for \(p.address)")
        _ = try await ResponderRadioTests.next("connected", in: &p.lines)
        try p.peer.send(["encrypt": [String: Any]()])
        _ = try await ResponderRadioTests.next("encrypted", in: &p.lines)
    }
}
