import Testing
import BLECore
import ATT
import GATTClient
import BLETestSupport
import BLEWire

/// Enhanced ATT bearers against Bumble's EATT server (scenario "eatt"; Core Spec 5.4 Vol 3,
/// Part G, 5.3 and Part F, 3.2.11): the Server / Client Supported Features handshake (Part G,
/// 7.2 and 7.4), three bearers from one enhanced Credit Based Connection Request on PSM
/// 0x0027, the peripheral's reads in flight on all three at once (the peer's barrier
/// characteristic proves it); a peer without EATT leaves the unenhanced bearer.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EATTRadioTests {
    static func withPeripheral(_ radio: VirtualRadio, _ id: String, _ body: (Peripheral) async throws -> Void) async throws {
        let central = try await Central.open(radio.transportSpec)
        let device = try #require(radio.device(id))
        let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
        let peripheral = try await Peripheral(connection: link)
        do {
            try await body(peripheral)
        } catch {
            print(radio.recentLog)
            throw error
        }
        try? await link.disconnect()
        await central.close()
    }

    static let fff0 = ServiceIdentifier(uuid: "FFF0")
    static let barrier = CharacteristicIdentifier(uuid: "FFD1", service: ServiceIdentifier(uuid: "FFD0"))
    static let clientFeatures = CharacteristicIdentifier(uuid: "2B29", service: ServiceIdentifier(uuid: "1801"))

    /// Reads FFF1-FFF8 through the peripheral, `rounds` times each, all at once, from as
    /// many tasks; returns the values in order.
    static func readAll(_ peripheral: Peripheral, rounds: Int) async throws -> [String] {
        let characteristics = try await peripheral.characteristics(of: fff0)
        #expect(characteristics.count == 8)
        let ids = characteristics.map { CharacteristicIdentifier(uuid: $0.uuid, service: fff0) }
        return try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for round in 0..<rounds {
                for (i, id) in ids.enumerated() {
                    group.addTask { (round * 8 + i, String(decoding: try await peripheral.read(id), as: UTF8.self)) }
                }
            }
            var values = [String](repeating: "", count: rounds * 8)
            for try await (i, value) in group { values[i] = value }
            return values
        }
    }

    /// The peer's barrier (FFD1) answers only once reads of it wait on three different
    /// bearers at the same time, each with the central's CID of the bearer it came on: three
    /// reads from three tasks are answered, on CIDs 0x0040, 0x0041, 0x0042.
    @Test func readsRunInParallelOnThreeEnhancedBearers() async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
            try await Self.withPeripheral(radio, "eatt") { peripheral in
                _ = try await peripheral.characteristics(of: Self.barrier.service)
                let pool = try await peripheral.enhancedBearers(count: 3)
                #expect(pool.isEnhanced)
                #expect(pool.bearers.count == 3)
                // Bumble's Server Supported Features: EATT Supported (bit 0, Vol 3, Part G, 7.4).
                #expect(await peripheral.serverFeatures == [.enhancedATTBearer])
                // Our Client Supported Features: Enhanced ATT bearer (bit 1) and Multiple
                // Handle Value Notifications (bit 2), Vol 3, Part G, 7.2.
                #expect(try await peripheral.read(Self.clientFeatures) == [0x06])
                // ATT_MTU: the smaller L2CAP MTU (ours 517, Bumble's 2048), no Exchange MTU.
                #expect(await pool.bearers[0].mtu == 517)
                let cids = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                    for _ in 0..<3 { group.addTask { try await peripheral.read(Self.barrier) } }
                    return try await group.reduce(into: Set<[UInt8]>()) { $0.insert($1) }
                }
                #expect(cids == [[0x40, 0x00], [0x41, 0x00], [0x42, 0x00]])
                // And many more reads than bearers, all answered right.
                #expect(try await Self.readAll(peripheral, rounds: 4) == (0..<32).map { "value \($0 % 8 + 1)" })
            }
        }
    }

    @Test func peerWithoutEATTLeavesTheUnenhancedBearer() async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
            try await Self.withPeripheral(radio, "plain") { peripheral in
                let pool = try await peripheral.enhancedBearers(count: 3)
                #expect(!pool.isEnhanced)
                // No Server Supported Features characteristic: no EATT bit.
                #expect(await peripheral.serverFeatures == [])
                let unenhanced = await peripheral.bearer
                #expect(pool.bearers.count == 1 && pool.bearers[0] === unenhanced)
                // Forced: Bumble serves no PSM 0x0027 there and refuses it; the same fallback.
                #expect(try await !peripheral.enhancedBearers(count: 3, force: true).isEnhanced)
                #expect(try await Self.readAll(peripheral, rounds: 2) == (0..<16).map { "value \($0 % 8 + 1)" })
            }
        }
    }

    /// The peripheral subscribes after opening two enhanced bearers: its CCCD write goes
    /// out on one of them, and Bumble (whose CCCDs are per bearer) sends on that bearer.
    static func subscribeOnEnhancedBearer(_ peripheral: Peripheral, _ characteristic: CharacteristicIdentifier,
                                          indications: Bool) async throws -> NotificationStream<[UInt8]> {
        let pool = try await peripheral.enhancedBearers(count: 2)
        #expect(pool.isEnhanced)
        return try await peripheral.subscribe(to: characteristic, indications: indications)
    }

    /// Four counter values in a row (uint32 little endian, one every 100 ms).
    static func fourInARow(_ stream: NotificationStream<[UInt8]>) async throws {
        var counters: [UInt32] = []
        for try await value in stream {
            try #require(value.count == 4)
            counters.append(value.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
            if counters.count == 4 { break }
        }
        #expect(counters == (0..<4).map { counters[0] + UInt32($0) }, "\(counters)")
    }

    @Test func notificationsOnAnEnhancedBearerReachTheSubscription() async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
            try await Self.withPeripheral(radio, "eatt") { peripheral in
                let counter = CharacteristicIdentifier(uuid: "FFE1", service: ServiceIdentifier(uuid: "FFE0"))
                try await Self.fourInARow(try await Self.subscribeOnEnhancedBearer(peripheral, counter, indications: false))
                // The peer logged the bearer of the CCCD write (long before four values came).
                #expect(radio.recentLog.contains("(CCCD written on CID 0x0040)"), "\(radio.recentLog)")
            }
        }
    }

    /// Bumble waits for each confirmation on the bearer of its indication (30 s) before the
    /// next: four in a row means each was confirmed on the enhanced bearer.
    @Test func indicationsOnAnEnhancedBearerAreConfirmedThere() async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
            try await Self.withPeripheral(radio, "eatt") { peripheral in
                let counter = CharacteristicIdentifier(uuid: "FFE2", service: ServiceIdentifier(uuid: "FFE0"))
                try await Self.fourInARow(try await Self.subscribeOnEnhancedBearer(peripheral, counter, indications: true))
                #expect(radio.recentLog.contains("(CCCD written on CID 0x0040)"), "\(radio.recentLog)")
            }
        }
    }

    /// The peer ends the first link after its third notification; the reconnect policy
    /// restores it and, with `reopenAfterRestore`, the peripheral opens its enhanced bearers
    /// again before writing the CCCD again, so the peer sees that write on an enhanced bearer
    /// (a CID 0x004X, never 0x0004) and the barrier reads run on three bearers of the new link.
    @Test func restoredLinkReopensTheEnhancedBearers() async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
            let central = try await Central.open(radio.transportSpec)
            let device = try #require(radio.device("eatt-dropper"))
            let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10),
                                                 reconnect: .always(maxAttempts: 5, backoff: .exponential(initial: .milliseconds(100), jitter: 0)))
            var events = await link.events().makeAsyncIterator()
            let peripheral = try await Peripheral(connection: link)
            do {
                _ = try await peripheral.characteristics(of: Self.barrier.service)
                #expect(try await peripheral.enhancedBearers(count: 3, reopenAfterRestore: true).isEnhanced)
                let counter = CharacteristicIdentifier(uuid: "FFE1", service: ServiceIdentifier(uuid: "FFE0"))
                var values = try await peripheral.subscribe(to: counter).makeAsyncIterator()
                for _ in 0..<3 { _ = try await values.next() }
                while let event = await events.nextLifecycle() {
                    if case .connected = event { break }
                }
                // Values come on the restored link only once its CCCD is written again, which
                // follows the reopening; three more cover any sent before the drop.
                for _ in 0..<3 { _ = try await values.next() }
                let log = radio.recentLog
                #expect(log.ranges(of: "(CCCD written on CID 0x004").count == 2, "\(log)")
                #expect(!log.contains("(CCCD written on CID 0x0004)"))
                #expect(await peripheral.bearerPool.bearers.count == 3)
                let cids = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                    for _ in 0..<3 { group.addTask { try await peripheral.read(Self.barrier) } }
                    return try await group.reduce(into: Set<[UInt8]>()) { $0.insert($1) }
                }
                #expect(cids.count == 3 && !cids.contains([0x04, 0x00]), "\(cids)")
            } catch {
                print(radio.recentLog)
                throw error
            }
            try? await peripheral.disconnect()
            await central.close()
        }
    }
}
