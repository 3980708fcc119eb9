import Testing
import BLETestSupport
import GATTClient
import SMP
import BLEWire
import BLECore

/// Signed Write Without Response (Vol 3, Part G, 4.9.2) against Bumble's "signer" peer
/// (Fixtures/peers/scenarios/security-extras.json, signedWrites): the central distributes its CSRK
/// when pairing (Vol 3, Part H, 3.6.6), then signs writes on a link that is not encrypted;
/// the peer checks each MAC (2.4.5) with its own AES-CMAC and refuses a SignCounter that does
/// not grow.
@Suite(.serialized) struct SignedWriteRadioTests {
    let service = ServiceIdentifier(uuid: "5EC00001-0000-1000-8000-00805F9B34FB")
    var encrypted: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00002-0000-1000-8000-00805F9B34FB", service: service) }
    var signed: CharacteristicIdentifier { CharacteristicIdentifier(uuid: "5EC00004-0000-1000-8000-00805F9B34FB", service: service) }

    @Test(.timeLimit(.minutes(1)))
    func signedWritesOnAnUnencryptedLinkAreCheckedByThePeer() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("signer"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let central = try await Central.open(radio.transportSpec)
            let store = MemoryBondStore()
            let link = try await central.connect(peer, timeout: .seconds(10))
            var options = PairingOptions()
            options.initiatorKeys = [.signingKey]
            let bond = try await link.pair(options: options, store: store)
            #expect(bond.localSignatureKey != nil && bond.localSignCounter == 0)
            // A request answered on the encrypted link: the peer has taken the keys, and
            // kept them, before the link ends.
            #expect(try await Peripheral(connection: link).read(encrypted) == Array("encrypted".utf8))
            try await link.disconnect()

            // A new link, left unencrypted: writes are signed.
            let again = try await central.connect(peer, timeout: .seconds(10))
            #expect(await again.securityLevel == SecurityLevel.none)
            let peripheral = try await Peripheral(connection: again)
            await peripheral.setWriteSigner(store.dataSigner(for: peer).writeSigner)
            try await peripheral.writeSigned(Array("signed 1".utf8), to: signed)
            #expect(try await peripheral.read(signed) == Array("signed 1".utf8))
            try await peripheral.writeSigned(Array("signed 2".utf8), to: signed)
            #expect(try await peripheral.read(signed) == Array("signed 2".utf8))
            #expect(store.bond(for: peer)?.localSignCounter == 2)

            // A counter used before is a replay: the peer drops the write.
            var rolledBack = try #require(store.bond(for: peer))
            rolledBack.localSignCounter = 1
            try store.save(rolledBack)
            try await peripheral.writeSigned(Array("replayed".utf8), to: signed)
            #expect(try await peripheral.read(signed) == Array("signed 2".utf8))

            // Encrypted with the bond, the link authenticates the data itself: a plain Write
            // Command goes out (Vol 3, Part G, 4.9.2) and no counter is used.
            try await again.requireSecurity(.encrypted, store: store)
            try await peripheral.writeSigned(Array("plain".utf8), to: signed)
            #expect(store.bond(for: peer)?.localSignCounter == 2)
            await central.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aCharacteristicWithoutSignedWritesIsRefusedHere() async throws {
        try await VirtualRadio.with(scenario: "security-extras") { radio in
            let device = try #require(radio.device("signer"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let central = try await Central.open(radio.transportSpec)
            let link = try await central.connect(peer, timeout: .seconds(10))
            let peripheral = try await Peripheral(connection: link)
            let open = CharacteristicIdentifier(uuid: "5EC00003-0000-1000-8000-00805F9B34FB", service: service)
            do throws(GATTError) {
                try await peripheral.writeSigned([0x01], to: open)
                Issue.record("a signed write went to a characteristic without Authenticated Signed Writes")
            } catch {
                #expect(error.operation == .signedWriting)
                guard case .notSupported = error else { Issue.record("unexpected \(error)"); return }
            }
            await central.close()
        }
    }
}
