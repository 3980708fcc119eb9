import Testing
import Synchronization
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Pairing end to end against Bumble's Security Manager as the independent peer
/// (Fixtures/peers/scenarios/security.json): each association model of Vol 3, Part H,
/// 2.3.5.1, then a read of a characteristic that needs encryption (Vol 3, Part C, 10.3).
@Suite(.serialized) struct PairingRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }

    /// Connects to a scenario device and opens its GATT client.
    func open(_ radio: VirtualRadio, _ id: String) async throws -> (Central, Connection, Peripheral) {
        let central = try await Central.open(radio.transportSpec)
        let device = try #require(radio.device(id))
        let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
        let peripheral = try await Peripheral(connection: link)
        return (central, link, peripheral)
    }

    @Test(.timeLimit(.minutes(1)))
    func justWorksSecureConnectionsBondsAndUnlocksTheEncryptedCharacteristic() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "jw")
            // Unencrypted, the peer refuses the read (Vol 3, Part F, 3.4.1.1); with no policy
            // to raise security, its answer comes back as it was.
            do throws(GATTError) {
                _ = try await peripheral.read(encrypted)
                Issue.record("the encrypted characteristic was read on a plain link")
            } catch {
                #expect(error.attErrorCode == .insufficientEncryption || error.attErrorCode == .insufficientAuthentication)
            }
            var events = await link.events().makeAsyncIterator()

            let store = MemoryBondStore()
            let bond = try await link.pair(store: store)
            #expect(await link.securityLevel == .encrypted)
            #expect(await events.nextLifecycle() == .securityChanged(.encrypted))
            let ltk = try #require(bond.longTermKey)
            #expect(ltk.secureConnections && !ltk.authenticated && ltk.keySize == 16 && ltk.ediv == 0 && ltk.rand == 0)
            #expect(bond.identityAddress?.address == link.peer.address)
            #expect(bond.identityResolvingKey != nil)
            #expect(store.bond(for: link.peer) == bond)

            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    /// GATT raises security itself: the refused read pairs (Just Works) and is retried once.
    @Test(.timeLimit(.minutes(1)))
    func refusedReadPairsAndRetriesOnce() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "jw")
            let store = MemoryBondStore()
            await peripheral.setSecurityRaiser(link.securityRaiser(store: store))
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            #expect(await link.securityLevel == .encrypted)
            #expect(store.bond(for: link.peer) != nil)
            await central.close()
        }
    }

    /// Bonding, then a new link to the same peer: the stored LTK encrypts it without pairing
    /// (Vol 3, Part H, 2.4.4.1), and the peer's own key store agrees.
    @Test(.timeLimit(.minutes(1)))
    func aBondReEncryptsANewLinkWithoutPairing() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, _) = try await open(radio, "jw")
            let store = MemoryBondStore()
            try await link.pair(store: store)
            try await link.disconnect()

            let again = try await central.connect(link.peer, timeout: .seconds(10))
            let peripheral = try await Peripheral(connection: again)
            try await again.requireSecurity(.encrypted, store: store)
            #expect(await again.securityLevel == .encrypted)
            // Bumble's controller compares the two LTKs: a wrong one ends the link (MIC failure).
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func passkeyEntryTypedHereIsAuthenticated() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "passkey")
            var options = PairingOptions()
            options.ioCapability = .keyboardOnly
            options.mitm = true
            let agent = RecordingAgent(passkey: 123456)
            let bond = try await link.pair(options: options, agent: agent)
            #expect(agent.asked.withLock { $0 } == 1)
            #expect(bond.longTermKey?.authenticated == true)
            #expect(await link.securityLevel == .secureConnections)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func wrongPasskeyFailsWithTheReasonAndThePeer() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, _) = try await open(radio, "passkey")
            var options = PairingOptions()
            options.ioCapability = .keyboardOnly
            options.mitm = true
            do throws(PairingError) {
                try await link.pair(options: options, agent: RecordingAgent(passkey: 654321))
                Issue.record("pairing with a wrong passkey succeeded")
            } catch {
                // The peer checks our first confirm value against its passkey (2.3.5.6.3).
                #expect(error.peer == link.peer)
                #expect(error.reason == .confirmValueFailed)
                #expect("\(error)".hasPrefix("Confirm Value Failed (0x04) pairing with F0:5E:C0:00:00:02"))
            }
            #expect(await link.securityLevel == SecurityLevel.none)
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func numericComparisonShowsSixDigitsAndAuthenticates() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "numeric")
            var options = PairingOptions()
            options.ioCapability = .displayYesNo
            options.mitm = true
            let agent = RecordingAgent(passkey: nil)
            let bond = try await link.pair(options: options, agent: agent)
            let compared = try #require(agent.compared.withLock { $0 })
            #expect(compared <= 999_999)
            #expect(bond.longTermKey?.authenticated == true && bond.longTermKey?.secureConnections == true)
            #expect(await link.securityLevel == .secureConnections)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func legacyJustWorksGetsTheDistributedLTK() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "legacy")
            let bond = try await link.pair()
            let ltk = try #require(bond.longTermKey)
            #expect(!ltk.secureConnections && !ltk.authenticated)
            #expect(await link.securityLevel == .encrypted)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func legacyPasskeyEntry() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, peripheral) = try await open(radio, "legacy-passkey")
            var options = PairingOptions()
            options.ioCapability = .keyboardOnly
            options.mitm = true
            let bond = try await link.pair(options: options, agent: RecordingAgent(passkey: 1234))
            #expect(bond.longTermKey?.authenticated == true && bond.longTermKey?.secureConnections == false)
            #expect(await link.securityLevel == .authenticated)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    /// LE legacy Out of Band pairing (Vol 3, Part H, 2.3.5.4): both sides set the OOB flag and
    /// take the TK shared another way ("legacyOOBTK" of the "legacy-oob" peer in
    /// security-extras.json); a wrong TK fails on the peer's confirm value.
    @Test(.timeLimit(.minutes(1)))
    func legacyOutOfBandPairsWithTheSharedTK() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, peripheral) = try await open(radio, "legacy-oob")
            var options = PairingOptions()
            options.secureConnections = false
            options.legacyOOBTemporaryKey = 0x0123_4567_89AB_CDEF_0011_2233_4455_6677
            let bond = try await link.pair(options: options)
            // OOB keys are MITM-protected (2.3.5.1), legacy ones never reach the SC level.
            #expect(bond.longTermKey?.authenticated == true && bond.longTermKey?.secureConnections == false)
            #expect(await link.securityLevel == .authenticated)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func legacyOutOfBandWithTheWrongTKFails() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, _) = try await open(radio, "legacy-oob")
            var options = PairingOptions()
            options.secureConnections = false
            options.legacyOOBTemporaryKey = 0x0123_4567_89AB_CDEF_0011_2233_4455_6678
            do throws(PairingError) {
                _ = try await link.pair(options: options)
                Issue.record("pairing with the wrong OOB key succeeded")
            } catch {
                #expect(error.reason == .confirmValueFailed, "\(error)")
            }
            #expect(await link.securityLevel == SecurityLevel.none)
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func secureConnectionsOnlyRefusesALegacyPeer() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let (central, link, _) = try await open(radio, "legacy")
            var options = PairingOptions()
            options.secureConnectionsOnly = true
            do throws(PairingError) {
                try await link.pair(options: options)
                Issue.record("SC Only pairing with a legacy peer succeeded")
            } catch {
                // The legacy peer answers without the SC flag: this side stops (2.3.5.1).
                #expect(error.reason == .authenticationRequirements)
                #expect("\(error)".contains("Secure Connections Only"))
            }
            #expect(await link.securityLevel == SecurityLevel.none)
            await central.close()
        }
    }
}

/// A person who types a given passkey and confirms every comparison, counting what was asked.
final class RecordingAgent: PairingAgent {
    let passkey: UInt32?
    let asked = Mutex(0)
    let compared = Mutex<UInt32?>(nil)
    init(passkey: UInt32?) { self.passkey = passkey }

    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
    func confirmJustWorks(peer: LEAddress) async -> Bool { true }

    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
        asked.withLock { $0 += 1 }
        return passkey
    }

    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool {
        compared.withLock { $0 = value }
        return true
    }
}
