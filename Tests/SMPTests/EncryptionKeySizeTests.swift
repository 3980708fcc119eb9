import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// The link's encryption key size over the in-process virtual controller: from Encryption
/// Change v2 (Vol 4, Part E, 7.7.8, event 0x59: status, handle, Encryption_Enabled,
/// Encryption_Key_Size), else from HCI_Read_Encryption_Key_Size (7.5.7, opcode 0x1408,
/// Command Complete: status, handle, Key_Size) after Encryption Change v1 or Encryption Key
/// Refresh Complete (7.7.39, event 0x30); and key sizes in pairing (Vol 3, Part H, 2.3.4:
/// Pairing Failed with Encryption Key Size, 0x06). Events and answers are built byte by byte
/// from those sections.
@Suite(.timeLimit(.minutes(1)))
struct EncryptionKeySizeTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_78), type: .random)
    static let readKeySize = HCIOpcode(rawValue: 0x1408)
    static let enableEncryption = HCIOpcode(rawValue: 0x2019)
    let fixture: SMPLinkFixture

    init() async throws {
        fixture = try await SMPLinkFixture(peer: Self.peer)
    }

    /// The link's Connection_Handle, least significant octet first.
    func handleBytes() async throws -> [UInt8] {
        let handle = try #require(await fixture.link.handle)
        return [UInt8(handle & 0xFF), UInt8(handle >> 8)]
    }

    /// LE Enable Encryption answered with Command Status (7.7.15), then `event`.
    func answerEnableEncryption(with event: HCIEventPacket) {
        fixture.vc.answer(Self.enableEncryption, with: .events({ _ in
            [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x19, 0x20]), event]
        }), times: 1)
    }

    /// Read Encryption Key Size answered once with Command Complete (7.7.14): one command
    /// credit, opcode 0x1408, status success, handle, `size`.
    func answerKeySize(_ size: UInt8, _ h: [UInt8]) {
        fixture.vc.answer(Self.readKeySize, with: .events({ _ in
            [HCIEventPacket(code: 0x0E, parameters: [0x01, 0x08, 0x14, 0x00] + h + [size])]
        }), times: 1)
    }

    /// Encrypts the link with a `size`-octet key, reported by Encryption Change v1 and read back.
    func encrypt(keySize size: UInt8) async throws -> [UInt8] {
        let h = try await handleBytes()
        answerEnableEncryption(with: HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x01]))
        answerKeySize(size, h)
        try await fixture.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        return h
    }

    @Test func encryptionChangeV1IsFollowedByReadEncryptionKeySize() async throws {
        let h = try await handleBytes()
        #expect(await fixture.link.encryptionKeySize == nil)
        var events = await fixture.link.events().makeAsyncIterator()
        answerEnableEncryption(with: HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x01]))
        answerKeySize(7, h)
        let size = try await fixture.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        #expect(size == 7)
        #expect(await fixture.link.encryptionKeySize == 7)
        #expect(await events.next() == .securityChanged(.encrypted))
        #expect(await events.next() == .encryptionKeySizeChanged(7))
        // HCI_Read_Encryption_Key_Size: the Connection_Handle only.
        let read = try await fixture.vc.waitForCommand(Self.readKeySize)
        #expect(read.parameters == h)
    }

    @Test func encryptionChangeV2CarriesTheKeySize() async throws {
        let h = try await handleBytes()
        answerEnableEncryption(with: HCIEventPacket(code: 0x59, parameters: [0x00] + h + [0x01, 0x0C]))
        let size = try await fixture.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        #expect(size == 12)
        #expect(await fixture.link.encryptionKeySize == 12)
        #expect(!fixture.vc.commandsReceived.contains { $0.opcode == Self.readKeySize })
    }

    /// A controller that cannot say (Read Encryption Key Size answered Unknown HCI Command,
    /// 0x01, in Command Complete) leaves the size of the key this side gave: a bond's key of
    /// 16 octets is known to be 16, and a refusal for key size does not re-encrypt with it.
    @Test func theGivenKeySizeStandsWhenTheControllerCannotSay() async throws {
        let h = try await handleBytes()
        answerEnableEncryption(with: HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x01]))
        fixture.vc.answer(Self.readKeySize, with: .unknownCommand, times: 1)
        let size = try await fixture.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted, keySize: 16)
        #expect(size == 16)
        #expect(await fixture.link.encryptionKeySize == 16)
        #expect(SecurityLevel.encrypted.toAsk(after: .insufficientEncryptionKeySize, keySize: await fixture.link.encryptionKeySize) == nil)
    }

    /// Key Refresh Complete (status, handle) reads the size again: here the controller's own
    /// answer (16 octets); encryption turned off forgets it.
    @Test func keyRefreshReadsTheSizeAgainAndEncryptionOffClearsIt() async throws {
        let h = try await encrypt(keySize: 7)
        answerEnableEncryption(with: HCIEventPacket(code: 0x30, parameters: [0x00] + h))
        let size = try await fixture.link.startEncryption(longTermKey: 0x43, ediv: 0, rand: 0, level: .encrypted)
        #expect(size == 16)
        #expect(await fixture.link.encryptionKeySize == 16)
        #expect(fixture.vc.commandsReceived.filter { $0.opcode == Self.readKeySize }.map(\.parameters) == [h, h])
        var events = await fixture.link.events().makeAsyncIterator()
        fixture.vc.inject(.event(HCIEventPacket(code: 0x08, parameters: [0x00] + h + [0x00])))
        #expect(await events.next() == .securityChanged(SecurityLevel.none))
        #expect(await events.next() == .encryptionKeySizeChanged(nil))
        #expect(await fixture.link.encryptionKeySize == nil)
    }

    /// Asked for a 16-octet key on a link with a 7-octet one: pairing again with Maximum
    /// Encryption Key Size 16, and refusing (Pairing Failed, Encryption Key Size) a peer that
    /// still allows only 7, even though the options would accept 7.
    @Test func aShortKeyPairsAgainForSixteenOctets() async throws {
        _ = try await encrypt(keySize: 7)
        var options = PairingOptions()
        options.minimumKeySize = 7
        let link = fixture.link
        let task = Task { () -> PairingError? in
            do throws(PairingError) { try await link.requireSecurity(.encrypted, keySize: 16, options: options); return nil } catch { return error }
        }
        // Pairing Request: NoInputNoOutput, no OOB, bonding|SC, 16 octets, keys none / Enc|Id|Sign.
        #expect(try await fixture.smpSent(count: 1)[0] == [0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x07])
        // Pairing Response with Maximum Encryption Key Size 7.
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x09, 0x07, 0x00, 0x07])
        let error = try #require(await task.value)
        #expect(error.reason == .encryptionKeySize)
        #expect(error.description == "Encryption Key Size (0x06) pairing with C0:11:22:33:44:78: the peer allows at most 7-octet keys, this side needs 16")
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x06])
    }

    /// A link that is encrypted with a key long enough: nothing to do.
    @Test func aLongEnoughKeyIsKept() async throws {
        _ = try await encrypt(keySize: 16)
        try await fixture.link.requireSecurity(.encrypted, keySize: 16)
        #expect(fixture.smpSentCount == 0)
    }

    /// Options that cap keys below what is asked: no pairing is tried.
    @Test func aKeySizeBeyondTheOptionsFailsWithoutPairing() async throws {
        _ = try await encrypt(keySize: 7)
        var options = PairingOptions()
        options.maximumKeySize = 10
        options.minimumKeySize = 7
        await #expect(throws: PairingError(peer: Self.peer, .localFailed(.encryptionKeySize, detail: "the peer needs a 16-octet key and PairingOptions.maximumKeySize is 10: allow up to 16 octets to pair again with a longer key"))) {
            try await fixture.link.requireSecurity(.encrypted, keySize: 16, options: options)
        }
        #expect(fixture.smpSentCount == 0)
    }

    /// A bond whose key is shorter than asked is not used: pairing runs instead.
    @Test func aBondWithAShortKeyIsNotUsedForALongerOne() async throws {
        let ltk = LongTermKey(key: 0x1234, ediv: 0, rand: 0, keySize: 7, authenticated: false, secureConnections: true)
        let store = MemoryBondStore([Bond(peer: Self.peer, longTermKey: ltk)])
        let link = fixture.link
        let task = Task { () -> PairingError? in
            do throws(PairingError) { try await link.requireSecurity(.encrypted, keySize: 16, store: store); return nil } catch { return error }
        }
        #expect(try await fixture.smpSent(count: 1)[0] == [0x01, 0x03, 0x00, 0x09, 0x10, 0x00, 0x07])
        #expect(!fixture.vc.commandsReceived.contains { $0.opcode == Self.enableEncryption })
        task.cancel()
        _ = await task.value
    }

    /// The minimum key size is an option: a peer allowing 9 octets is refused at 10 with
    /// Pairing Failed, Encryption Key Size (0x06); one allowing 10 gets on to Phase 2 (this
    /// side's Pairing Public Key, code 0x0C).
    @Test func theMinimumKeySizeIsAnOption() async throws {
        var options = PairingOptions()
        options.minimumKeySize = 10
        let link = fixture.link
        let first = Task { () -> PairingError? in
            do throws(PairingError) { _ = try await link.pair(options: options); return nil } catch { return error }
        }
        _ = try await fixture.smpSent(count: 1)
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x09, 0x09, 0x00, 0x07])
        let error = try #require(await first.value)
        #expect(error.description == "Encryption Key Size (0x06) pairing with C0:11:22:33:44:78: the peer allows at most 9-octet keys, this side needs 10")
        #expect(try await fixture.smpSent(count: 2)[1] == [0x05, 0x06])

        let second = Task { () -> PairingError? in
            do throws(PairingError) { _ = try await link.pair(options: options); return nil } catch { return error }
        }
        _ = try await fixture.smpSent(count: 3)
        try fixture.sendSMP([0x02, 0x03, 0x00, 0x09, 0x0A, 0x00, 0x07])
        #expect(try await fixture.smpSent(count: 4)[3].first == 0x0C)
        second.cancel()
        _ = await second.value
    }
}
