import Foundation
import Testing
import Synchronization
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

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

    /// Bumble's own resolvable private address (its IRK is the sample IRK of Vol 3, Part H,
    /// D.7): the bond gets the identity address and IRK, and scan results resolve the address
    /// to the identity with it.
    @Test(.timeLimit(.minutes(1)))
    func aPeerWithAResolvablePrivateAddressIsRecognisedByItsIdentity() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let device = try #require(radio.device("private"))
            let identity = try #require(LEAddress(device.address, type: .random))
            let central = try await Central.open(radio.transportSpec)
            let store = MemoryBondStore()
            await central.setAddressResolver(store.addressResolver)
            let current = try await Self.discover(central, named: "SC private sim")
            #expect(current.address.randomKind == .resolvablePrivate)
            #expect(current.identityAddress == nil, "resolved before there was a bond")

            let link = try await central.connect(current.address, timeout: .seconds(10))
            let bond = try await link.pair(store: store)
            #expect(bond.identityAddress == identity)
            #expect(bond.identityResolvingKey == 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B)
            #expect(ResolvablePrivateAddress.resolves(current.address, irk: try #require(bond.identityResolvingKey)))
            #expect(store.bond(resolving: current.address) == bond)
            try await link.disconnect()

            // Known now: the scan names the device by its identity, and the bond encrypts a
            // new link made to its private address. Bumble's controller has LL Privacy and
            // takes the resolving list (it does not resolve with it: the resolver does).
            #expect(try await central.loadResolvingList(store.resolvingListEntries).isEnabled)
            await central.setAddressResolver(store.addressResolver)
            let again = try await Self.discover(central, named: "SC private sim")
            #expect(again.identityAddress == identity)
            #expect(again.identity == identity)
            // Connecting by identity: the address it uses now, found by scanning.
            #expect(try await central.currentAddress(of: identity, bonds: store) == again.address)
            let second = try await central.connect(again.address, timeout: .seconds(10))
            try await second.requireSecurity(.encrypted, agent: CountingAgent(), store: store)
            #expect(await second.securityLevel == .encrypted)
            let peripheral = try await Peripheral(connection: second)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    static func discover(_ central: Central, named name: String) async throws -> DiscoveredPeripheral {
        var options = ScanOptions()
        options.timeout = .seconds(10)
        for try await event in await central.scan(filter: ScanFilter(nameContains: name), options: options) {
            if case .discovered(let p) = event, p.isConnectable { return p }
        }
        throw CancellationError()
    }
}

/// Counts the pairings that reached the agent (Just Works asks it to confirm).
final class CountingAgent: PairingAgent {
    let asked = Mutex(0)
    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { nil }
    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
    func confirmJustWorks(peer: LEAddress) async -> Bool {
        asked.withLock { $0 += 1 }
        return true
    }
}
