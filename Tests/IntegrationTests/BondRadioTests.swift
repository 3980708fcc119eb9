import Foundation
import Testing
import Synchronization
import BLETestSupport
import GATTClient
import SMP

/// Bonds across hosts against Bumble's Security Manager (Fixtures/peers/scenarios/security.json):
/// a new host with the same bond directory encrypts with the stored LTK without pairing
/// (Vol 3, Part H, 2.4.4.1); a peer that forgot the bond refuses the key (PIN or Key Missing,
/// 0x06) and pairing again replaces it.
@Suite(.serialized) struct BondRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }

    static func temporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }

    /// A new host: a new Central on the radio and the bond store of its adapter in `directory`.
    static func host(_ radio: VirtualRadio, bonds directory: String) async throws -> (Central, FileBondStore) {
        let central = try await Central.open(radio.transportSpec)
        let adapter = try #require(await central.controllerInfo?.address)
        return (central, try FileBondStore(adapter: adapter, directory: directory))
    }

    @Test(.timeLimit(.minutes(1)))
    func aNewHostWithTheSameBondDirectoryEncryptsWithoutPairing() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("jw"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let (first, store) = try await Self.host(radio, bonds: dir)
            let link = try await first.connect(peer, timeout: .seconds(10))
            let bond = try await link.pair(store: store)
            await first.close()

            let (second, reopened) = try await Self.host(radio, bonds: dir)
            #expect(reopened.bond(for: peer) == bond)
            let again = try await second.connect(peer, timeout: .seconds(10))
            let agent = CountingAgent()
            try await again.requireSecurity(.encrypted, agent: agent, store: reopened)
            #expect(agent.asked.withLock { $0 } == 0, "paired again instead of using the bond")
            #expect(await again.securityLevel == .encrypted)
            // Bumble's controller compares both LTKs: a wrong one would end the link (MIC failure).
            let peripheral = try await Peripheral(connection: again)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await second.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aPeerThatForgotTheBondIsNamedAndPairingAgainReplacesIt() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("forgetful"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let central = try await Central.open(radio.transportSpec)
            let store = MemoryBondStore()
            let link = try await central.connect(peer, timeout: .seconds(10))
            let old = try await link.pair(store: store)
            // The peer forgets its bonds when the link ends.
            try await link.disconnect()

            let again = try await central.connect(peer, timeout: .seconds(10))
            do throws(PairingError) {
                try await again.requireSecurity(.encrypted, store: store)
                Issue.record("the forgotten key encrypted the link")
            } catch {
                #expect(error.kind == .peerForgotBond)
                #expect("\(error)" == "F0:5E:C0:00:00:06 no longer has the bond (encryption with the stored key failed with PIN or Key Missing, 0x06): pair again to replace it ('ble pair F0:5E:C0:00:00:06', or Connection.pair(store:))")
            }
            #expect(await again.securityLevel == SecurityLevel.none)
            // The link is still up: pairing again on it works and replaces the stored bond.
            let fresh = try await again.pair(store: store)
            #expect(fresh.longTermKey != nil && fresh.longTermKey != old.longTermKey)
            #expect(store.bond(for: peer) == fresh)
            let peripheral = try await Peripheral(connection: again)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }
}

/// Counts the pairings that reached the agent (Just Works asks it to confirm).
final class CountingAgent: PairingAgent {
    let asked = Mutex(0)
    func confirmJustWorks(peer: LEAddress) async -> Bool {
        asked.withLock { $0 += 1 }
        return true
    }
}
