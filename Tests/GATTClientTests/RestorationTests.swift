import Testing
import Glibc
import BLECore
import BLETestSupport
@testable import GATTClient
import GATTServer
import BLEWire
import BLETransport

/// `Restoration` on the in-process virtual controller: links and subscriptions stored on one
/// run come back on the next (a new controller, central and restoration on the same store),
/// through the Filter Accept List, with their notification streams; a corrupt file is kept
/// aside and the app goes on.
@Suite(.timeLimit(.minutes(1))) struct RestorationTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    static let batteryLevel = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A19), service: ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0x180F)))
    /// ATT Read By Group Type Request (Vol 3, Part F, 3.4.4.9): what primary service discovery sends.
    static let readByGroupType: UInt8 = 0x10

    /// One run of the app: a controller with the heart-rate monitor database behind `peer`
    /// (not advertising yet), a central and a restoration on `root`.
    struct Run {
        let vc: VirtualController
        let server: GATTServer
        let central: Central
        let restoration: Restoration
        let cache: GATTCache

        /// With `encrypting`, the controller encrypts links (LE Enable Encryption answered with
        /// Encryption Change) and the restoration raises security with a fixed key.
        init(root: String, options: RestorationOptions = RestorationOptions(), encrypting: Bool = false) async throws {
            vc = VirtualController()
            server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
            central = try await vc.poweredOnCentral()
            cache = GATTCache(central: central, directory: root + "/gatt-cache")
            if encrypting { vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting) }
            var security: (@Sendable (Connection) -> SecurityRaiser)?
            if encrypting {
                security = { link in
                    let raise: SecurityRaiser = { level, _ in try await link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: level) }
                    return raise
                }
            }
            restoration = Restoration(central: central, store: RestorationStore(identifier: "hall", directory: root), cache: cache,
                                      security: security, options: options)
        }

        func appear() {
            vc.addPeripheral(SimulatedPeripheral(address: RestorationTests.peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        }

        /// ATT requests the peer received (first octet of each PDU on CID 0x0004).
        func attOpcodesSent() -> [UInt8] {
            vc.l2capReceived.filter { $0.channelID == 0x0004 }.compactMap(\.payload.first)
        }
    }

    /// The restart: a new run on `root` restores what the last one stored, `meanwhile` looks at
    /// it before the peer appears, then the peer appears; the run and its restoration events.
    static func restart(root: String, options: RestorationOptions = RestorationOptions(), encrypting: Bool = false,
                        meanwhile: (Run) async throws -> Void = { _ in }) async throws
        -> (run: Run, events: AsyncThrowingStream<RestorationEvent, any Error>) {
        let run = try await Run(root: root, options: options, encrypting: encrypting)
        let events = try await run.restoration.restore()
        try await meanwhile(run)
        run.appear()
        return (run, events)
    }

    /// The next event as a restored link, or nil after recording that `what` was not restored.
    static func nextRestored(_ events: inout AsyncThrowingStream<RestorationEvent, any Error>.AsyncIterator,
                             _ what: String = "the link") async throws -> RestoredLink? {
        guard case .restored(let link) = try await events.next() else {
            Issue.record("\(what) was not restored")
            return nil
        }
        return link
    }

    @Test func aRestoredLinkResumesNotificationsAfterARestart() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }

        let first = try await Run(root: root)
        first.appear()
        let link = try await first.restoration.connect(Self.peer, reconnect: .always(maxAttempts: 3))
        let values = try await first.restoration.subscribe(Self.batteryLevel, on: link)
        #expect(await first.server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x11]) == 1)
        var before = values.makeAsyncIterator()
        #expect(try await before.next() == [0x11])
        try await first.cache.flush()
        await first.central.close()
        // Battery Level's value is at 0x0016 and its CCCD at 0x0017 in this database.
        let hash = await first.server.databaseHash()
        #expect(try await RestorationStore(identifier: "hall", directory: root).load() == [
            RestorableLink(peer: Self.peer, reconnect: .always(maxAttempts: 3, backoff: .exponential()), security: .none,
                           subscriptions: [RestorableSubscription(characteristic: Self.batteryLevel, valueHandle: 0x0016, cccdHandle: 0x0017,
                                                                  databaseHash: hash, writtenEncrypted: false)]),
        ])

        // The restart: a new controller, central and restoration on the same directory.
        let (second, events) = try await Self.restart(root: root) { second in
            // The stored device waits on the Filter Accept List: LE Create Connection (7.8.12)
            // with Initiator_Filter_Policy 0x01, no direct connect.
            let create = try await second.vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
            #expect(create.parameters[4] == 0x01)
            #expect(second.vc.filterAcceptList == [Self.peer])
        }
        var restored = events.makeAsyncIterator()
        guard let back = try await Self.nextRestored(&restored) else { return }
        #expect(back.peer == Self.peer)
        #expect(back.failures.isEmpty)
        let stream = try #require(back.streams[Self.batteryLevel])
        // The CCCD was written again (ATT Write Request 0x12 to 0x0017, notifications 0x0001)
        // and nothing was discovered: the GATT cache had the database for this hash.
        #expect(second.vc.l2capReceived.contains { $0.channelID == 0x0004 && $0.payload == [0x12, 0x17, 0x00, 0x01, 0x00] })
        #expect(!second.attOpcodesSent().contains(Self.readByGroupType))
        #expect(await second.server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x22]) == 1)
        var after = stream.makeAsyncIterator()
        #expect(try await after.next() == [0x22])
        try await second.cache.flush()
        await second.central.close()
    }

    @Test func aBondedServersKeptCCCDIsNotWrittenAgain() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let first = try await Run(root: root, encrypting: true)
        first.appear()
        let link = try await first.restoration.connect(Self.peer, security: .encrypted)
        #expect(await link.connection.securityLevel == .encrypted)
        _ = try await first.restoration.subscribe(Self.batteryLevel, on: link)
        try await first.cache.flush()
        await first.central.close()
        #expect(try await RestorationStore(identifier: "hall", directory: root).load().first?.subscriptions.first?.writtenEncrypted == true)

        var options = RestorationOptions()
        options.trustsBondedServerCCCDs = true
        let (second, events) = try await Self.restart(root: root, options: options, encrypting: true)
        var it = events.makeAsyncIterator()
        guard let back = try await Self.nextRestored(&it) else { return }
        #expect(await back.connection.securityLevel == .encrypted)
        // LE Enable Encryption (Vol 4, Part E, 7.8.24) went out, and no ATT Write Request (0x12)
        // to Battery Level's CCCD (0x0017): the server keeps it for the bond. (The one write is
        // the Service Changed CCCD's, which a database from the cache enables.)
        #expect(second.vc.commandsReceived.contains { $0.opcode.rawValue == 0x2019 })
        #expect(!second.vc.l2capReceived.contains { $0.channelID == 0x0004 && $0.payload.starts(with: [0x12, 0x17, 0x00]) })
        // What that server sends: a Handle Value Notification (0x1B) of Battery Level (0x0016).
        let stream = try #require(back.streams[Self.batteryLevel])
        try second.vc.sendL2CAP(from: Self.peer, channelID: 0x0004, payload: [0x1B, 0x16, 0x00, 0x55])
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [0x55])
        try await second.cache.flush()
        await second.central.close()
    }

    @Test func aLinkStoredWithoutReconnectComesBackOnce() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let first = try await Run(root: root)
        first.appear()
        _ = try await first.restoration.connect(Self.peer)
        await first.central.close()

        let (second, events) = try await Self.restart(root: root)
        var it = events.makeAsyncIterator()
        guard let back = try await Self.nextRestored(&it) else { return }
        #expect(back.streams.isEmpty)
        // Policy .never: nothing is left to bring back, so the stream ends.
        #expect(try await it.next() == nil)
        #expect(try await second.restoration.storedLinks().map(\.peer) == [Self.peer])
        await second.central.close()
    }

    @Test func aDeviceThatIsNotBroughtBackAgainLeavesTheOthersWaiting() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let other = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_88), type: .random)
        try await RestorationStore(identifier: "hall", directory: root).save([
            RestorableLink(peer: Self.peer, reconnect: .never),
            RestorableLink(peer: other, reconnect: .always(maxAttempts: nil, backoff: .exponential())),
        ])
        let run = try await Run(root: root)
        let events = try await run.restoration.restore()
        _ = try await run.vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        #expect(run.vc.filterAcceptList == [Self.peer, other])
        run.appear()
        var it = events.makeAsyncIterator()
        guard let first = try await Self.nextRestored(&it, "the first link") else { return }
        #expect(first.peer == Self.peer)
        // Policy .never: the list is made again with the other device alone, which still comes back.
        try await run.vc.waitUntil("the list holds the other device alone") { vc in vc.filterAcceptList == [other] }
        run.vc.addPeripheral(SimulatedPeripheral(address: other, advertisingData: [0x02, 0x01, 0x06],
                                                 attServer: GATTServer(database: .heartRateMonitor(), queue: run.vc.queue)))
        guard let second = try await Self.nextRestored(&it, "the second link") else { return }
        #expect(second.peer == other)
        await run.central.close()
    }

    @Test func aCorruptFileIsKeptAsideAndTheAppGoesOn() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let garbage = Array("BLERESTO".utf8) + [0x01, 0x01, 0x00, 0xFF]
        let file = try #require(fopen(root + "/hall", "w"))
        _ = garbage.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)

        let run = try await Run(root: root)
        await #expect(throws: RestorationError.corrupt(path: root + "/hall", keptAt: root + "/hall.corrupt",
                                                       detail: "restoration file: truncated, needs 1 more byte")) {
            _ = try await run.restoration.restore()
        }
        #expect(try FileBytes.read(root + "/hall.corrupt", atMost: 64) == garbage)
        // The app stores its links again from nothing.
        run.appear()
        _ = try await run.restoration.connect(Self.peer)
        #expect(try await RestorationStore(identifier: "hall", directory: root).load().map(\.peer) == [Self.peer])
        await run.central.close()
    }

    @Test func aCustomPolicyCannotBeStored() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let run = try await Run(root: root)
        await #expect(throws: RestorationError.customPolicy(peer: Self.peer.address)) {
            _ = try await run.restoration.connect(Self.peer, reconnect: .custom { _, _ in nil })
        }
        #expect(run.vc.commandsReceived.allSatisfy { $0.opcode.rawValue != 0x200D })
        await run.central.close()
    }
}
