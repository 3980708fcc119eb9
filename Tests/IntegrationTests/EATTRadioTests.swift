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
}
