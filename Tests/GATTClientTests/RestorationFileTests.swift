import Testing
import BLECore
@testable import GATTClient
import BLEWire

/// The restoration file (docs/restoration.md): its layout byte for byte, and a decoder that
/// answers every truncation, flipped bit and other version with a typed problem.
@Suite struct RestorationFileTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    static let batteryLevel = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A19), service: ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0x180F)))
    /// The Database Hash example of Core Spec 5.4, Vol 3, Part G, Appendix B.
    static let hash: [UInt8] = [0xF1, 0xCA, 0x2D, 0x48, 0xEC, 0xF5, 0x8B, 0xAC, 0x8A, 0x88, 0x30, 0xBB, 0xB9, 0xFB, 0xA9, 0x90]

    static let link = RestorableLink(
        peer: peer,
        reconnect: .always(maxAttempts: 5, backoff: .exponential(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(30), jitter: 0.2)),
        security: .encrypted,
        subscriptions: [RestorableSubscription(characteristic: batteryLevel, valueHandle: 0x0016, cccdHandle: 0x0017, databaseHash: hash, writtenEncrypted: true)])

    /// Written by hand from the layout; the CRC-32 is zlib's crc32 of the 62 octets before it.
    static let bytes: [UInt8] = Array("BLERESTO".utf8) + [0x01, 0x01, 0x00]
        + [0x77, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x01]        // C0:11:22:33:44:77, random
        + [0x02]                                            // security level 2: encrypted
        + [0x01, 0x05, 0x00, 0x00, 0x00]                    // always, at most 5 attempts
        + [0xF4, 0x01, 0x00, 0x00, 0xD0, 0x07, 0x00, 0x00]  // 500 ms, x2.000
        + [0x30, 0x75, 0x00, 0x00, 0xC8, 0x00]              // 30000 ms, jitter 0.200
        + [0x01]                                            // one subscription
        + [0x02, 0x0F, 0x18, 0x02, 0x19, 0x2A]              // 180F / 2A19
        + [0x06, 0x16, 0x00, 0x17, 0x00]                    // written encrypted, hash follows; 0x0016, 0x0017
        + [0xF1, 0xCA, 0x2D, 0x48, 0xEC, 0xF5, 0x8B, 0xAC, 0x8A, 0x88, 0x30, 0xBB, 0xB9, 0xFB, 0xA9, 0x90]
        + [0x42, 0x23, 0x72, 0x01]

    @Test func theLayoutIsTheDocumentedOne() throws {
        #expect(RestorationFile.encode([Self.link]) == Self.bytes)
        #expect(try RestorationFile.decode(Self.bytes) == [Self.link])
    }

    @Test func aLinkWithoutSubscriptionsOrPolicyRoundTrips() throws {
        let plain = RestorableLink(peer: LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public))
        let bytes = RestorationFile.encode([plain, Self.link])
        #expect(Array(bytes[11...19]) == [0x01, 0x00, 0x00, 0xDC, 0x1B, 0x00, 0x00, 0x01, 0x00])
        #expect(try RestorationFile.decode(bytes) == [plain, Self.link])
    }

    @Test func everyTruncationIsAProblemNotATrap() {
        for n in 0..<Self.bytes.count {
            #expect(throws: RestorationFile.Problem.self) { try RestorationFile.decode(Array(Self.bytes.prefix(n))) }
        }
    }

    @Test func everyFlippedBitIsCaught() {
        for i in 0..<Self.bytes.count * 8 {
            var damaged = Self.bytes
            damaged[i / 8] ^= 1 << UInt8(i % 8)
            #expect(throws: RestorationFile.Problem.self) { try RestorationFile.decode(damaged) }
        }
    }

    @Test func anotherVersionIsToldApartFromDamage() {
        var older = Self.bytes
        older[8] = 0
        #expect(throws: RestorationFile.Problem.version(0)) { try RestorationFile.decode(older) }
        #expect(throws: RestorationFile.Problem.version(2)) { try RestorationFile.decode(Array("BLERESTO".utf8) + [2]) }
    }

    @Test func countsPastTheBoundsAreRefusedBeforeAnyAllocation() {
        // 0xFFFF links claimed by a 13-octet file.
        var claim = Array("BLERESTO".utf8) + [0x01, 0xFF, 0xFF]
        claim += [0x00, 0x00, 0x00, 0x00]
        #expect(throws: RestorationFile.Problem.self) { try RestorationFile.decode(claim) }
        #expect(throws: RestorationFile.Problem.self) { try RestorationFile.decode([UInt8](repeating: 0, count: RestorationFile.maximumSize + 1)) }
    }
}
