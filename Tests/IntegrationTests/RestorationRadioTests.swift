import Foundation
import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// `Restoration` against Bumble, an independent peer: a host stores its link and subscription
/// (Fixtures/peers/scenarios/heart-rate.json) or its encrypted link (security.json), closes,
/// and a new host on the same store brings them back through the Filter Accept List: the
/// notifications resume, and the bond encrypts the restored link without pairing.
@Suite(.serialized) struct RestorationRadioTests {
    static let heartRate = ServiceIdentifier(uuid: "180D")
    static let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)

    static func temporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ble-restoration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }

    /// The first `.restored` link of `events`.
    static func firstRestored(_ events: AsyncThrowingStream<RestorationEvent, any Error>) async throws -> RestoredLink? {
        for try await event in events {
            switch event {
            case .restored(let link): return link
            case .failed(let peer, let error): Issue.record("\(peer) not restored: \(error)")
            }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(1)))
    func notificationsResumeOnANewHost() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let device = try #require(radio.device("hrm"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let first = try await Central.open(radio.transportSpec)
            let restoration = Restoration(central: first, store: RestorationStore(identifier: "hrm", directory: dir))
            let link = try await restoration.connect(peer, timeout: .seconds(10), reconnect: .always(maxAttempts: 2))
            var values = try await restoration.subscribe(Self.measurement, on: link).makeAsyncIterator()
            #expect(try await values.next() != nil)
            await first.close()

            let second = try await Central.open(radio.transportSpec)
            let back = try #require(try await Self.firstRestored(try await Restoration(central: second, store: RestorationStore(identifier: "hrm", directory: dir)).restore()))
            #expect(back.peer == peer)
            #expect(back.failures.isEmpty)
            var resumed = try #require(back.streams[Self.measurement]).makeAsyncIterator()
            var readings: [HeartRateMeasurement] = []
            while readings.count < 3, let value = try await resumed.next() { readings.append(try HeartRateMeasurement(gattValue: value)) }
            #expect(readings.count == 3)
            #expect(readings.allSatisfy { (30...220).contains($0.beatsPerMinute) })
            await second.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func theBondEncryptsTheRestoredLinkWithoutPairing() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let encrypted = CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB"))
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let (first, bonds) = try await BondRadioTests.host(radio, bonds: dir + "/bonds")
            let firstAgent = CountingAgent()
            let restoration = Restoration(central: first, store: RestorationStore(identifier: "jw", directory: dir),
                                          security: { $0.securityRaiser(agent: firstAgent, store: bonds) })
            let link = try await restoration.connect(peer, timeout: .seconds(10), security: .encrypted)
            #expect(firstAgent.asked.withLock { $0 } == 1)
            #expect(try await link.peripheral.read(encrypted) == Array("encrypted".utf8))
            await first.close()

            let (second, reopened) = try await BondRadioTests.host(radio, bonds: dir + "/bonds")
            let agent = CountingAgent()
            let events = try await Restoration(central: second, store: RestorationStore(identifier: "jw", directory: dir),
                                               security: { $0.securityRaiser(agent: agent, store: reopened) }).restore()
            let back = try #require(try await Self.firstRestored(events))
            #expect(agent.asked.withLock { $0 } == 0, "paired again instead of using the bond")
            #expect(await back.connection.securityLevel == .encrypted)
            #expect(try await back.peripheral.read(encrypted) == Array("encrypted".utf8))
            await second.close()
        }
    }
}
