import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Channel servers on this side that need security (`acceptL2CAPChannels(security:minimumKeySize:)`),
/// with the test playing the peer's L2CAP: the peer's LE and enhanced Credit Based Connection
/// Requests on a link below the server's level are refused with the results of Core Spec 5.4
/// Vol 3, Part A, 4.23 and 4.26 (0x0005 insufficient authentication, 0x0007 insufficient
/// encryption key size, 0x0008 insufficient encryption) and take no CID; once the link is
/// encrypted (HCI LE Enable Encryption answered by the test: Command Status, then Encryption
/// Change v1 0x08 or v2 0x59 with the key size, Vol 4, Part E, 7.7.8) the same request is
/// accepted. Against a Bumble peer that pairs and asks again: L2CAPSecurityRadioTests.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedServerSecurityTests {
    /// Command Status for LE Enable Encryption (0x2019), then Encryption Change: v1 without
    /// `keySize`, v2 with it.
    static func encrypting(keySize: UInt8?) -> CommandAnswer {
        .events { command in
            let handle = Array(command.parameters.prefix(2))
            let change = keySize.map { HCIEventPacket(code: 0x59, parameters: [0x00] + handle + [0x01, $0]) }
                ?? HCIEventPacket(code: 0x08, parameters: [0x00] + handle + [0x01])
            return [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x19, 0x20]), change]
        }
    }

    /// A link with a server on PSM 0x0081 (MTU 300, MPS 60, 5 credits) that needs some security.
    struct Serving {
        let vc: VirtualController
        let central: Central
        let connection: Connection
        var incoming: AsyncStream<CreditBasedChannel>.AsyncIterator

        init(_ security: SecurityLevel, minimumKeySize: Int = 7) async throws {
            (vc, central) = try await VC.stack()
            connection = try await central.connect(VC.peer)
            incoming = try await connection.acceptL2CAPChannels(psm: 0x0081, mtu: 300, mps: 60, credits: 5, security: security,
                                                                minimumKeySize: minimumKeySize).makeAsyncIterator()
        }
    }

    static func encrypt(_ vc: VirtualController, _ connection: Connection, level: SecurityLevel,
                        keySize: Int? = nil, reported: UInt8? = nil) async throws {
        vc.answer(HCIOpcode(rawValue: 0x2019), with: encrypting(keySize: reported), times: 1)
        try await connection.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: level, keySize: keySize)
    }

    /// The peer's LE request (4.22): SPSM 0x0081, SCID 0x0045, MTU 100, MPS 50, 2 credits.
    static func leRequest(_ vc: VirtualController, identifier: UInt8) throws {
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: identifier, body: .leCreditBasedConnectionRequest(
            psm: 0x0081, sourceCID: 0x0045, mtu: 100, mps: 50, initialCredits: 2)))
    }

    /// The peer's enhanced request (4.25): SPSM 0x0081, MTU 100, MPS 64, 2 credits, SCIDs 0x0046 0x0047.
    static func enhancedRequest(_ vc: VirtualController, identifier: UInt8) throws {
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: identifier, body: .creditBasedConnectionRequest(
            psm: 0x0081, mtu: 100, mps: 64, initialCredits: 2, sourceCIDs: [0x0046, 0x0047])))
    }

    /// The `count`-th command with `code` this side sent on the LE signaling channel.
    static func sent(_ vc: VirtualController, code: UInt8, count: Int = 1) async throws -> [UInt8] {
        try await vc.waitUntil("signaling 0x\(String(code, radix: 16)) #\(count)") { _ in vc.signalingReceived.filter { $0.code == code }.count >= count }
        return vc.signalingReceived.filter { $0.code == code }[count - 1].bytes
    }

    /// 4.23 refusal: identifier, length 10, DCID MTU MPS credits all 0, then the result.
    static func leRefusal(_ identifier: UInt8, _ result: UInt8) -> [UInt8] {
        [0x15, identifier, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8) + [result, 0x00]
    }

    /// 4.26 refusal of both channels: length 12, MTU MPS credits 0, the result, DCIDs 0x0000 0x0000.
    static func enhancedRefusal(_ identifier: UInt8, _ result: UInt8) -> [UInt8] {
        [0x18, identifier, 0x0C, 0x00] + [UInt8](repeating: 0, count: 6) + [result, 0x00] + [UInt8](repeating: 0, count: 4)
    }

    /// 4.23 success: DCID 0x0040, MTU 300, MPS 60, credits 5.
    static func leAccepted(_ identifier: UInt8) -> [UInt8] {
        [0x15, identifier, 0x0A, 0x00, 0x40, 0x00, 0x2C, 0x01, 0x3C, 0x00, 0x05, 0x00, 0x00, 0x00]
    }

    @Test func plainLinkIsRefusedWithInsufficientEncryptionUntilEncrypted() async throws {
        var bed = try await Serving(.encrypted)
        let vc = bed.vc, connection = bed.connection
        try Self.leRequest(vc, identifier: 3)
        #expect(try await Self.sent(vc, code: 0x15) == Self.leRefusal(0x03, 0x08))
        try Self.enhancedRequest(vc, identifier: 4)
        #expect(try await Self.sent(vc, code: 0x18) == Self.enhancedRefusal(0x04, 0x08))
        // The peer encrypts the link (here: this side with a key the test's controller accepts).
        try await Self.encrypt(vc, connection, level: .encrypted)
        try Self.leRequest(vc, identifier: 5)
        #expect(try await Self.sent(vc, code: 0x15, count: 2) == Self.leAccepted(0x05))
        // The refused requests took no CID: the first channel made has 0x0040.
        let channel = try #require(await bed.incoming.next())
        #expect(channel.localCID == 0x0040 && channel.remoteCID == 0x0045)
        try vc.sendL2CAP(from: VC.peer, channelID: 0x0040, payload: [0x02, 0x00, 0xAB, 0xCD])
        #expect(try await channel.receive() == [0xAB, 0xCD])
        // 4.26 on the encrypted link: MTU 300, MPS 64, credits 5, success, DCIDs 0x0041 0x0042.
        try Self.enhancedRequest(vc, identifier: 6)
        #expect(try await Self.sent(vc, code: 0x18, count: 2) == [0x18, 0x06, 0x0C, 0x00, 0x2C, 0x01, 0x40, 0x00, 0x05, 0x00, 0x00, 0x00, 0x41, 0x00, 0x42, 0x00])
    }

    @Test func authenticatedServerRefusesUnauthenticatedKeys() async throws {
        var bed = try await Serving(.authenticated)
        let vc = bed.vc, connection = bed.connection
        // Plain, then encrypted with a Just Works key: insufficient authentication both times.
        try Self.leRequest(vc, identifier: 3)
        #expect(try await Self.sent(vc, code: 0x15) == Self.leRefusal(0x03, 0x05))
        try await Self.encrypt(vc, connection, level: .encrypted)
        try Self.leRequest(vc, identifier: 4)
        #expect(try await Self.sent(vc, code: 0x15, count: 2) == Self.leRefusal(0x04, 0x05))
        try Self.enhancedRequest(vc, identifier: 5)
        #expect(try await Self.sent(vc, code: 0x18) == Self.enhancedRefusal(0x05, 0x05))
        // A MITM-protected key: accepted.
        try await Self.encrypt(vc, connection, level: .authenticated)
        try Self.leRequest(vc, identifier: 6)
        #expect(try await Self.sent(vc, code: 0x15, count: 3) == Self.leAccepted(0x06))
        #expect(try #require(await bed.incoming.next()).remoteCID == 0x0045)
    }

    @Test func shortOrUnknownKeyIsRefusedWithInsufficientEncryptionKeySize() async throws {
        var bed = try await Serving(.encrypted, minimumKeySize: 16)
        let vc = bed.vc, connection = bed.connection
        // Encryption Change v2 reports a 7-octet key.
        try await Self.encrypt(vc, connection, level: .encrypted, reported: 7)
        #expect(await connection.encryptionKeySize == 7)
        try Self.leRequest(vc, identifier: 3)
        #expect(try await Self.sent(vc, code: 0x15) == Self.leRefusal(0x03, 0x07))
        try Self.enhancedRequest(vc, identifier: 4)
        #expect(try await Self.sent(vc, code: 0x18) == Self.enhancedRefusal(0x04, 0x07))
        // v1, a controller that cannot say (HCI_Read_Encryption_Key_Size fails with Unknown
        // HCI Command, 0x01) and no size from the caller: not known, so not enough.
        vc.answer(HCIOpcode(rawValue: 0x1408), with: .unknownCommand, times: 1)
        try await Self.encrypt(vc, connection, level: .encrypted)
        #expect(await connection.encryptionKeySize == nil)
        try Self.leRequest(vc, identifier: 5)
        #expect(try await Self.sent(vc, code: 0x15, count: 2) == Self.leRefusal(0x05, 0x07))
        // The key a pairing made, 16 octets, given to startEncryption: accepted.
        try await Self.encrypt(vc, connection, level: .encrypted, keySize: 16)
        #expect(await connection.encryptionKeySize == 16)
        try Self.leRequest(vc, identifier: 6)
        #expect(try await Self.sent(vc, code: 0x15, count: 3) == Self.leAccepted(0x06))
        #expect(try #require(await bed.incoming.next()).localCID == 0x0040)
    }

    @Test func refusalFollowsTheLevelAndKeySize() {
        let cases: [(SecurityLevel, Int?, SecurityLevel, Int, CreditBasedConnectionResult?)] = [
            (.none, nil, .none, 7, nil),
            (.none, nil, .encrypted, 7, .insufficientEncryption),
            (.none, nil, .authenticated, 7, .insufficientAuthentication),
            (.none, nil, .none, 16, .insufficientEncryption),
            (.encrypted, 16, .encrypted, 7, nil),
            (.encrypted, 16, .authenticated, 7, .insufficientAuthentication),
            (.authenticated, 16, .secureConnections, 7, .insufficientAuthentication),
            (.encrypted, 10, .encrypted, 12, .insufficientEncryptionKeySize),
            (.encrypted, nil, .encrypted, 12, .insufficientEncryptionKeySize),
            (.encrypted, 12, .none, 12, nil),
            (.secureConnections, 16, .authenticated, 16, nil),
        ]
        for (level, keySize, needed, minimum, expected) in cases {
            #expect(CreditBasedConnectionResult.channelServerRefusal(link: level, keySize: keySize, needed: needed, minimumKeySize: minimum) == expected,
                    "link \(level), key \(keySize.map(String.init) ?? "unknown"), needs \(needed), \(minimum) octets")
        }
    }
}
