import Testing
import BLECore
import ATT
import GATTClient
import BLETestSupport

/// Enhanced ATT bearers against Bumble's EATT server (scenario "eatt"; Core Spec 5.4 Vol 3,
/// Part G, 5.3 and Part F, 3.2.11): three bearers from one enhanced Credit Based Connection
/// Request on PSM 0x0027, reads spread across them at once; a peer without EATT leaves the
/// unenhanced bearer.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EATTRadioTests {
    static func withPeripheral(_ id: String, _ body: (Peripheral) async throws -> Void) async throws {
        try await VirtualRadio.with(scenario: "eatt") { radio in
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
    }

    /// Reads FFF1-FFF8 through `pool`, `rounds` times each, all at once; returns the values
    /// in order and how many reads each bearer carried.
    static func readAll(_ pool: GATTBearerPool, rounds: Int) async throws -> (values: [String], perBearer: [Int]) {
        let uuid = BluetoothUUID(uuid16: 0xFFF0)
        let services = try await pool.next().discoverPrimaryServices(uuid: uuid)
        let service = try #require(services.first)
        let characteristics = try await pool.next().discoverCharacteristics(of: service)
        #expect(characteristics.count == 8)
        return try await withThrowingTaskGroup(of: (Int, Int, String).self) { group in
            for round in 0..<rounds {
                for (i, c) in characteristics.enumerated() {
                    let handle = c.valueHandle, procedures = pool.next()
                    let bearer = pool.bearers.firstIndex { $0 === procedures.bearer } ?? -1
                    group.addTask { (round * 8 + i, bearer, String(decoding: try await procedures.read(handle: handle), as: UTF8.self)) }
                }
            }
            var values = [String](repeating: "", count: rounds * 8)
            var perBearer = [Int](repeating: 0, count: pool.bearers.count)
            for try await (i, bearer, value) in group {
                values[i] = value
                perBearer[bearer] += 1
            }
            return (values, perBearer)
        }
    }

    @Test func readsRunInParallelOnThreeEnhancedBearers() async throws {
        try await Self.withPeripheral("eatt") { peripheral in
            let pool = try await peripheral.enhancedBearers(count: 3)
            #expect(pool.isEnhanced)
            #expect(pool.bearers.count == 3)
            // ATT_MTU: the smaller L2CAP MTU (ours 517, Bumble's 2048), no Exchange MTU.
            #expect(await pool.bearers[0].mtu == 517)
            let (values, perBearer) = try await Self.readAll(pool, rounds: 4)
            #expect(values == (0..<32).map { "value \($0 % 8 + 1)" })
            // 32 reads started at once, in turn over the three bearers.
            #expect(perBearer.sorted() == [10, 11, 11], "\(perBearer)")
        }
    }

    @Test func peerWithoutEATTLeavesTheUnenhancedBearer() async throws {
        try await Self.withPeripheral("plain") { peripheral in
            let pool = try await peripheral.enhancedBearers(count: 3)
            #expect(!pool.isEnhanced)
            #expect(pool.bearers.count == 1)
            let unenhanced = await peripheral.bearer
            #expect(pool.bearers[0] === unenhanced)
            let (values, perBearer) = try await Self.readAll(pool, rounds: 2)
            #expect(values == (0..<16).map { "value \($0 % 8 + 1)" })
            #expect(perBearer == [16])
        }
    }

    /// Moves the peer's subscription to `characteristic` onto an enhanced bearer: the
    /// peripheral subscribes (CCCD `value` on the unenhanced bearer), then the CCCD is
    /// cleared there and set on the second enhanced bearer, so Bumble sends on that bearer
    /// alone (its CCCDs are per bearer, Vol 3, Part G, 3.3.3.3).
    static func subscribeOnEnhancedBearer(_ peripheral: Peripheral, _ characteristic: CharacteristicIdentifier,
                                          value: UInt16) async throws -> NotificationStream<[UInt8]> {
        let pool = try await peripheral.enhancedBearers(count: 2)
        #expect(pool.isEnhanced)
        let stream = try await peripheral.subscribe(to: characteristic, indications: value == 0x0002)
        let cccd = try #require(try await peripheral.descriptors(of: characteristic).first {
            $0.uuid == BluetoothUUID(uuid16: 0x2902)
        })
        try await GATTProcedures(bearer: await peripheral.bearer).writeClientConfiguration(handle: cccd.handle, value: 0)
        try await pool.procedures[1].writeClientConfiguration(handle: cccd.handle, value: value)
        return stream
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
        try await Self.withPeripheral("eatt") { peripheral in
            let counter = CharacteristicIdentifier(uuid: "FFE1", service: ServiceIdentifier(uuid: "FFE0"))
            try await Self.fourInARow(try await Self.subscribeOnEnhancedBearer(peripheral, counter, value: 0x0001))
        }
    }

    /// Bumble waits for each confirmation on the bearer of its indication (30 s) before the
    /// next: four in a row means each was confirmed on the enhanced bearer.
    @Test func indicationsOnAnEnhancedBearerAreConfirmedThere() async throws {
        try await Self.withPeripheral("eatt") { peripheral in
            let counter = CharacteristicIdentifier(uuid: "FFE2", service: ServiceIdentifier(uuid: "FFE0"))
            try await Self.fourInARow(try await Self.subscribeOnEnhancedBearer(peripheral, counter, value: 0x0002))
        }
    }
}
