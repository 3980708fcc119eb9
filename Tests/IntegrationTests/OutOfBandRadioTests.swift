import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// LE Secure Connections Out of Band pairing (Vol 3, Part H, 2.3.5.6.4) with Bumble's "oob"
/// peer (Fixtures/peers/scenarios/security-extras.json). Each side's OOB data is r and
/// C = f4(PKx, PKx, r, 0); the OOB channel here is the open characteristics 5EC00008 (the
/// peer's data, as an app would scan it from a QR code) and 5EC00009 (this side's, for the
/// peer), each r then C, least significant octet first as in SMP PDUs.
@Suite(.serialized) struct OutOfBandRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }
    var peerData: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00008-0000-1000-8000-00805F9B34FB", service: service) }
    var ourData: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00009-0000-1000-8000-00805F9B34FB", service: service) }

    func open(_ radio: VirtualRadio) async throws -> (Central, Connection, Peripheral) {
        let central = try await Central.open(radio.transportSpec)
        let device = try #require(radio.device("oob"))
        let link = try await central.connect(try #require(LEAddress(device.address, type: .random)), timeout: .seconds(10))
        return (central, link, try await Peripheral(connection: link))
    }

    /// The peer's OOB data as it serves it.
    func readPeerOOB(_ peripheral: Peripheral) async throws -> OOBData {
        let bytes = try await peripheral.read(peerData)
        try #require(bytes.count == 32)
        return OOBData(random: UInt128(littleEndianBytes: bytes[0..<16]), confirm: UInt128(littleEndianBytes: bytes[16..<32]))
    }

    /// Gives the peer this side's OOB data (made from this link's key pair).
    func giveOurOOB(_ link: Connection, _ peripheral: Peripheral, spoil: Bool = false) async throws {
        let ours = try await link.securityManager().localOOBData()
        let random = spoil ? ours.random ^ 1 : ours.random
        try await peripheral.write(random.littleEndianBytes + ours.confirm.littleEndianBytes, to: ourData)
    }

    @Test(.timeLimit(.minutes(1)))
    func oobDataBothWaysPairsAuthenticatedSecureConnections() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, peripheral) = try await open(radio)
            var events = await link.events().makeAsyncIterator()
            try await giveOurOOB(link, peripheral)
            var options = PairingOptions()
            options.peerOOBData = try await readPeerOOB(peripheral)
            let store = MemoryBondStore()
            // No person takes part: the agent is the default one, which refuses anything but Just Works.
            let bond = try await link.pair(options: options, store: store)
            let ltk = try #require(bond.longTermKey)
            #expect(ltk.authenticated && ltk.secureConnections && ltk.level == .secureConnections)
            #expect(await link.securityLevel == .secureConnections)
            #expect(await events.nextLifecycle() == .securityChanged(.secureConnections))
            #expect(store.bond(for: link.peer) == bond)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    /// Only this side has OOB data (the peer's): Secure Connections uses OOB when either
    /// side sets the flag (2.3.5.1), with r = 0 for the side that has none.
    @Test(.timeLimit(.minutes(1)))
    func thePeersOOBDataAlonePairsAuthenticated() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, peripheral) = try await open(radio)
            var options = PairingOptions()
            options.peerOOBData = try await readPeerOOB(peripheral)
            let bond = try await link.pair(options: options)
            #expect(bond.longTermKey?.level == .secureConnections)
            #expect(await link.securityLevel == .secureConnections)
            #expect(try await peripheral.read(encrypted) == Array("encrypted".utf8))
            await central.close()
        }
    }

    /// A peer confirm value that does not match its public key: this side stops with
    /// Confirm Value Failed before sending its random value.
    @Test(.timeLimit(.minutes(1)))
    func aWrongPeerOOBValueFailsHere() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, peripheral) = try await open(radio)
            var oob = try await readPeerOOB(peripheral)
            oob.confirm ^= 1
            var options = PairingOptions()
            options.peerOOBData = oob
            do throws(PairingError) {
                _ = try await link.pair(options: options)
                Issue.record("pairing with a wrong OOB confirm value succeeded")
            } catch {
                #expect(error.reason == .confirmValueFailed)
                #expect(error.peer == link.peer)
                #expect("\(error)".hasPrefix("Confirm Value Failed (0x04) pairing with F0:5E:C0:00:00:0C"), "\(error)")
                #expect("\(error)".contains("OOB confirm value"), "\(error)")
            }
            #expect(await link.securityLevel == SecurityLevel.none)
            await central.close()
        }
    }

    /// This side's r spoiled on the way to the peer: the peer's check of C fails and it
    /// says so with Confirm Value Failed.
    @Test(.timeLimit(.minutes(1)))
    func aWrongOOBValueAtThePeerFailsThere() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let (central, link, peripheral) = try await open(radio)
            try await giveOurOOB(link, peripheral, spoil: true)
            var options = PairingOptions()
            options.peerOOBData = try await readPeerOOB(peripheral)
            do throws(PairingError) {
                _ = try await link.pair(options: options)
                Issue.record("the peer accepted a wrong OOB value")
            } catch {
                #expect(error.reason == .confirmValueFailed, "\(error)")
                #expect(error.peer == link.peer)
            }
            #expect(await link.securityLevel == SecurityLevel.none)
            await central.close()
        }
    }
}
