import Foundation
import Testing
import Synchronization
import BLECore
import BLETestSupport
import SMP
import BLEWire

/// The stack as the SMP responder on a peripheral-role link, with Bumble's Security Manager as
/// the independent initiator (Fixtures/peers/pairing_central.py): each association model of
/// Vol 3, Part H, 2.3.5.1 in LE Secure Connections and legacy pairing, key distribution both
/// ways (3.6.1), and a later link encrypted from the stored key (LE Long Term Key Request,
/// Vol 4, Part E, 7.7.65.5). Bumble's controller compares the LTKs of both sides: a link that
/// reports encryption has the same key on both.
@Suite("SMP responder on the virtual radio", .serialized, .timeLimit(.minutes(2)))
struct ResponderRadioTests {
    static let hostAddress = "00:1B:DC:0F:00:0A"
    static let centralAddress = LEAddress(BluetoothAddress("C0:00:00:00:00:02")!, type: .random)
    /// The IRK Bumble distributes (its configuration, octets as on the air).
    static let centralIRK = "00112233445566778899aabbccddeeff"

    /// The Bumble central process: its JSON lines, and its stdin (a pipe) for commands.
    final class PairingCentral: Sendable {
        let process: ChildProcess
        let lines: AsyncStream<String>
        let port: Int

        init(_ options: [String]) async throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let python = ProcessInfo.processInfo.environment["BLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
                ?? root.appendingPathComponent(".venv/bin/python").path
            let script = root.appendingPathComponent("Fixtures/peers/pairing_central.py").path
            process = try ChildProcess(path: python, [script, "--host-address", ResponderRadioTests.hostAddress, "--irk", ResponderRadioTests.centralIRK] + options,
                                       stdin: .pipe, stdout: .pipe)
            let (stream, feed) = AsyncStream<String>.makeStream()
            let pending = PeripheralRadioTests.PendingText()
            PipeReader.start(process.pipe!, chunk: { bytes in
                for line in pending.append(bytes) { feed.yield(line) }
            }, end: { feed.finish() })
            // The bound of every wait on the peer: its lines end after 60 s whatever happens.
            Task { try? await Task.sleep(for: .seconds(60)); feed.finish() }
            lines = stream
            var iterator = stream.makeAsyncIterator()
            let ready = await iterator.next()
            guard let ready, let object = PeripheralRadioTests.BumbleCentral.object(ready), let port = object["port"] as? Int else {
                _ = process.stop()
                throw PeerFailure("pairing_central.py gave no ready line: \(ready ?? "its output ended")")
            }
            self.port = port
        }

        /// Writes one command line to the peer's stdin.
        func send(_ command: [String: Any]) throws {
            try process.send(Array(try JSONSerialization.data(withJSONObject: command)) + [0x0A])
        }

        func stop() {
            _ = process.stop()
            if let input = process.input { close(input) }
        }
    }

    struct PeerFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// An agent whose numbers the test sees and whose typed passkey the test gives.
    final class TestAgent: PairingAgent {
        let shown: AsyncStream<UInt32>
        private let show: AsyncStream<UInt32>.Continuation
        let typed: AsyncStream<UInt32>
        let type: AsyncStream<UInt32>.Continuation
        let justWorks: Bool

        init(justWorks: Bool = true) {
            (shown, show) = AsyncStream.makeStream()
            (typed, type) = AsyncStream.makeStream()
            self.justWorks = justWorks
        }

        func displayPasskey(_ passkey: UInt32, peer: LEAddress) async { show.yield(passkey) }
        func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
            var it = typed.makeAsyncIterator()
            return await it.next()
        }
        func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool {
            show.yield(value)
            return true
        }
        func confirmJustWorks(peer: LEAddress) async -> Bool { justWorks }
    }

    /// Our peripheral, advertising, with the Bumble central connected and the responder set.
    struct Bed {
        let peer: PairingCentral
        var lines: AsyncStream<String>.Iterator
        let central: Central
        var incoming: AsyncStream<Connection>.Iterator
        let link: Connection
        let results: AsyncStream<Result<Bond, PairingError>>
        let report: @Sendable (Result<Bond, PairingError>) -> Void
        let store = MemoryBondStore()

        /// `everyLink`: the responder is set on the Central for every incoming link
        /// (`Central.acceptPairing`), else on the first link once it is offered.
        init(_ peerOptions: [String], options: PairingOptions = .responder, agent: any PairingAgent = JustWorksAgent(), everyLink: Bool = false) async throws {
            peer = try await PairingCentral(peerOptions)
            lines = peer.lines.makeAsyncIterator()
            central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
            let (results, feed) = AsyncStream<Result<Bond, PairingError>>.makeStream()
            self.results = results
            let report: @Sendable (Result<Bond, PairingError>) -> Void = { feed.yield($0) }
            self.report = report
            if everyLink { await central.acceptPairing(options: options, agent: agent, store: store) { _, result in report(result) } }
            incoming = await central.incomingConnections().makeAsyncIterator()
            _ = try await central.startAdvertising(AdvertisingData([.completeLocalName("swift-ble")]),
                                                   parameters: AdvertisingParameters(resumeAfterDisconnect: true))
            _ = try await ResponderRadioTests.next("connected", in: &lines)
            link = try #require(await incoming.next())
            if !everyLink { try await link.acceptPairing(options: options, agent: agent, store: store, onResult: report) }
        }

        /// The outcome of the pairing our responder ran.
        func outcome() async throws -> Result<Bond, PairingError> {
            var it = results.makeAsyncIterator()
            return try #require(await it.next())
        }

        func close() async {
            await central.close()
            peer.stop()
        }
    }

    /// The next line whose object has `key` (the peer's lines end after 60 s: the bound).
    static func next(_ key: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> [String: Any] {
        while let line = await iterator.next() {
            if let object = PeripheralRadioTests.BumbleCentral.object(line), let value = object[key] {
                return value as? [String: Any] ?? ["value": value]
            }
        }
        throw PeerFailure("pairing_central.py printed no \(key) line within 60 s")
    }

    /// A key as Bumble prints it: its octets as on the air, least significant first.
    static func hex(_ key: UInt128) -> String { key.littleEndianBytes.hexString(separator: "") }

    @Test("Just Works, Secure Connections: the LTK of f5 on both sides, the central's IRK and identity taken")
    func justWorksSecureConnections() async throws {
        var bed = try await Bed(["--io", "none"])
        try bed.peer.send(["pair": [String: Any]()])
        let paired = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        let ltk = try #require(bond.longTermKey)
        #expect(ltk.secureConnections && !ltk.authenticated && ltk.keySize == 16 && ltk.ediv == 0 && ltk.rand == 0)
        #expect(paired["sc"] as? Bool == true)
        #expect(paired["ltk"] as? String == Self.hex(ltk.key))
        // The central's Identity Information and Identity Address Information (3.6.4, 3.6.5).
        #expect(bond.identityResolvingKey == UInt128(littleEndianBytes: try #require([UInt8](hex: Self.centralIRK))))
        #expect(bond.identityAddress == Self.centralAddress)
        #expect(await bed.link.securityLevel == .encrypted)
        #expect(bed.store.bond(for: bed.link.peer) != nil)
        await bed.close()
    }

    @Test("Just Works, legacy: the STK encrypts, our LTK with EDIV and Rand reaches the central")
    func justWorksLegacy() async throws {
        var bed = try await Bed(["--io", "none", "--legacy"])
        try bed.peer.send(["pair": [String: Any]()])
        let paired = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        #expect(paired["sc"] as? Bool == false)
        let given = try #require(bond.localLongTermKey)
        #expect(!given.secureConnections && !given.authenticated)
        let central = try #require(paired["ltkCentral"] as? [String: Any])
        #expect(central["ltk"] as? String == Self.hex(given.key))
        #expect(central["ediv"] as? Int == Int(given.ediv))
        #expect(central["rand"] as? String == (0..<8).map { UInt8(truncatingIfNeeded: given.rand >> (8 * $0)) }.hexString(separator: ""))
        // The central's own LTK (its Encryption Information, 3.6.2) is kept for this side as central.
        #expect(bond.longTermKey != nil)
        #expect(await bed.link.securityLevel == .encrypted)
        await bed.close()
    }

    @Test("Passkey Entry, this side displays and the central types: authenticated")
    func passkeyDisplayedHere() async throws {
        let agent = TestAgent()
        var options = PairingOptions.responder
        options.ioCapability = .displayOnly
        var bed = try await Bed(["--io", "keyboard", "--mitm"], options: options, agent: agent)
        try bed.peer.send(["pair": [String: Any]()])
        var shown = agent.shown.makeAsyncIterator()
        let passkey = try #require(await shown.next())
        try bed.peer.send(["passkey": Int(passkey)])
        _ = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        #expect(bond.longTermKey?.authenticated == true && bond.longTermKey?.secureConnections == true)
        #expect(await bed.link.securityLevel == .secureConnections)
        await bed.close()
    }

    @Test("Passkey Entry, the central displays and this side types (legacy): authenticated")
    func passkeyTypedHereLegacy() async throws {
        let agent = TestAgent()
        var options = PairingOptions.responder
        options.ioCapability = .keyboardOnly
        var bed = try await Bed(["--io", "display", "--mitm", "--legacy"], options: options, agent: agent)
        try bed.peer.send(["pair": [String: Any]()])
        let shown = try await Self.next("display", in: &bed.lines)
        agent.type.yield(UInt32(try #require(shown["value"] as? Int)))
        _ = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        #expect(bond.localLongTermKey?.authenticated == true)
        #expect(await bed.link.securityLevel == .authenticated)
        await bed.close()
    }

    @Test("Numeric Comparison: both sides show the same six digits")
    func numericComparison() async throws {
        let agent = TestAgent()
        var options = PairingOptions.responder
        options.ioCapability = .displayYesNo
        var bed = try await Bed(["--io", "yesno", "--mitm"], options: options, agent: agent)
        try bed.peer.send(["pair": [String: Any]()])
        var shown = agent.shown.makeAsyncIterator()
        let here = try #require(await shown.next())
        let there = try await Self.next("compare", in: &bed.lines)
        #expect(there["value"] as? Int == Int(here))
        _ = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        #expect(bond.longTermKey?.authenticated == true)
        await bed.close()
    }

    @Test("Out of Band, Secure Connections: the central has our r and C")
    func outOfBand() async throws {
        var bed = try await Bed(["--io", "none"])
        let oob = try await bed.link.securityManager().localOOBData()
        try bed.peer.send(["pair": ["oob": ["r": Self.hex(oob.random), "c": Self.hex(oob.confirm)]]])
        _ = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        #expect(bond.longTermKey?.authenticated == true && bond.longTermKey?.secureConnections == true)
        await bed.close()
    }

    @Test("A refused Just Works pairing: Pairing Failed, Pairing Not Supported (0x05), on both sides")
    func refused() async throws {
        var bed = try await Bed(["--io", "none"], agent: TestAgent(justWorks: false))
        try bed.peer.send(["pair": [String: Any]()])
        let failed = try await Self.next("pairingFailed", in: &bed.lines)
        #expect(failed["reason"] as? Int == 0x05)
        guard case .failure(let error) = try await bed.outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.reason == .pairingNotSupported)
        #expect(await bed.link.securityLevel == SecurityLevel.none)
        await bed.close()
    }

    @Test("A central that stops answering: the SMP timer ends the pairing with a timeout, and SMP is over on the link")
    func timeout() async throws {
        let agent = TestAgent()
        var options = PairingOptions.responder
        options.ioCapability = .displayOnly
        // The SMP timer is 30 s (3.4); shortened here so the test waits 2 s.
        options.timeout = .seconds(2)
        var bed = try await Bed(["--io", "keyboard", "--mitm"], options: options, agent: agent)
        try bed.peer.send(["pair": [String: Any]()])
        // Bumble asks its delegate for the passkey and waits: it sends nothing more.
        _ = try await Self.next("passkeyRequest", in: &bed.lines)
        guard case .failure(let error) = try await bed.outcome() else { Issue.record("pairing succeeded"); return }
        #expect(error.kind == .timeout)
        await #expect(throws: PairingError(peer: bed.link.peer, .channelDead)) { try await bed.link.sendSecurityRequest(.encrypted) }
        await bed.close()
    }

    @Test("A Security Request reaches the central with AuthReq Bonding, MITM and SC (0x0D)")
    func securityRequest() async throws {
        var bed = try await Bed(["--io", "none"])
        try await bed.link.sendSecurityRequest(.authenticated)
        let request = try await Self.next("securityRequest", in: &bed.lines)
        #expect(request["authReq"] as? Int == 0x0D)
        await bed.close()
    }

    @Test("Bonded both ways, SC and legacy: a new link the central encrypts at once gets the stored key at its level", arguments: [false, true])
    func reconnectEncryptsFromTheBond(legacy: Bool) async throws {
        let agent = TestAgent()
        var options = PairingOptions.responder
        options.ioCapability = .displayOnly
        var bed = try await Bed(["--io", "keyboard", "--mitm"] + (legacy ? ["--legacy"] : []), options: options, agent: agent, everyLink: true)
        try bed.peer.send(["pair": [String: Any]()])
        var shown = agent.shown.makeAsyncIterator()
        try bed.peer.send(["passkey": Int(try #require(await shown.next()))])
        _ = try await Self.next("paired", in: &bed.lines)
        let bond = try await bed.outcome().get()
        let level: SecurityLevel = legacy ? .authenticated : .secureConnections
        #expect(await bed.link.securityLevel == level)

        // The central encrypts as soon as it is connected again: the Central's responder
        // setting answers the LTK Request before the test sees the new link.
        try bed.peer.send(["reconnect": [String: Any]()])
        try bed.peer.send(["encrypt": [String: Any]()])
        _ = try await Self.next("encrypted", in: &bed.lines)
        let again = try #require(await bed.incoming.next())
        var events = await again.events().makeAsyncIterator()
        if await again.securityLevel != level {
            #expect(await events.nextLifecycle() == .securityChanged(level))
        }
        #expect(await again.securityLevel == level)
        #expect(bed.store.bond(for: again.peer) == bond)
        await bed.close()
    }
}
