import Synchronization
import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Channel security on the host's own ACL path, with the test playing the peer's L2CAP: the
/// security results of the (LE) Credit Based Connection Response (Core Spec 5.4 Vol 3, Part A,
/// 4.23 and 4.26: 0x0005 insufficient authentication, 0x0006 insufficient authorization,
/// 0x0007 insufficient encryption key size, 0x0008 insufficient encryption) and `security:`.
/// The raiser here only records what it was asked for; where a test needs an encrypted link,
/// LE Enable Encryption is answered with Encryption Change (Vol 4, Part E, 7.7.8) and the key
/// size read back (7.5.7). Pairing for real is in L2CAPSecurityRadioTests and KeySizeRadioTests.
@Suite(.timeLimit(.minutes(1)))
struct CreditBasedChannelSecurityTests {
    static var peerName: String { "\(VC.peer.address)" }

    final class Raiser: Sendable {
        let asked = Mutex<[SecurityRequirement]>([])
        let failure: String?
        init(failing failure: String? = nil) { self.failure = failure }

        struct Failed: Error, CustomStringConvertible { let description: String }

        var raise: SecurityRaiser {
            { level, keySize in
                self.asked.withLock { $0.append(SecurityRequirement(level: level, keySize: keySize)) }
                if let failure = self.failure { throw Failed(description: failure) }
            }
        }
    }

    /// Answers the `count`-th LE Credit Based Connection Request (0x14) with `result`.
    static func answer(_ vc: VirtualController, count: Int, result: UInt16) async throws -> [UInt8] {
        try await vc.waitUntil("request #\(count)") { _ in vc.signalingReceived.filter { $0.code == 0x14 }.count >= count }
        let request = vc.signalingReceived.filter { $0.code == 0x14 }[count - 1].bytes
        try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .leCreditBasedConnectionResponse(
            destinationCID: result == 0 ? 0x0050 : 0, mtu: 256, mps: 23, initialCredits: result == 0 ? 3 : 0, result: result)))
        return request
    }

    static func requests(_ vc: VirtualController, code: UInt8 = 0x14) -> Int { vc.signalingReceived.filter { $0.code == code }.count }

    @Test func insufficientEncryptionRaisesTheLinkAndAsksOnceMore() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let raiser = Raiser()
        await connection.setSecurityRaiser(raiser.raise)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080, mtu: 512, mps: 100, credits: 4) }
        let first = try await Self.answer(vc, count: 1, result: 0x0008)
        let second = try await Self.answer(vc, count: 2, result: 0x0000)
        let channel = try await task.value
        // A plain link refused: the raiser was asked for encryption once, between the requests.
        #expect(raiser.asked.withLock { $0 } == [SecurityRequirement(level: .encrypted)])
        // 4.22: the same request again (SPSM 0x0080, SCID 0x0040, MTU 512, MPS 100, 4 credits), identifier 2.
        #expect(first == [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        #expect(second == [0x14, 0x02, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        #expect(channel.remoteCID == 0x0050)
    }

    @Test func withoutARaiserTheRefusalSaysPairingIsNeeded() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let task = Task { () async throws(L2CAPChannelError) -> CreditBasedChannel in try await connection.openL2CAPChannel(psm: 0x0080) }
        _ = try await Self.answer(vc, count: 1, result: 0x0005)
        let result = await task.result
        let expected = L2CAPChannelError.securityNeeded(peer: Self.peerName, psm: 0x0080, needed: .encrypted, refusal: .insufficientAuthentication, reason: nil)
        #expect(throws: expected) { try result.get() }
        #expect("\(expected)" == "the L2CAP channel to PSM 0x0080 on \(Self.peerName) needs the link 'encrypted' (\(Self.peerName) refused it: insufficient authentication (0x0005)): pair with \(Self.peerName) first (link.requireSecurity), or let the connection pair when needed (link.setSecurityRaiser)")
        await vc.settle()
        #expect(Self.requests(vc) == 1)
    }

    @Test func securityAskedWithoutARaiserSendsNoRequest() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        await #expect(throws: L2CAPChannelError.securityNeeded(peer: Self.peerName, psm: 0x0081, needed: .authenticated, refusal: nil, reason: nil)) {
            try await connection.openL2CAPChannel(psm: 0x0081, security: .authenticated)
        }
        await vc.settle()
        #expect(Self.requests(vc) == 0)
    }

    @Test func securityAskedIsRaisedBeforeTheRequest() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let raiser = Raiser()
        await connection.setSecurityRaiser(raiser.raise)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080, security: .authenticated) }
        try await vc.waitUntil("the request") { _ in Self.requests(vc) == 1 }
        #expect(raiser.asked.withLock { $0 } == [SecurityRequirement(level: .authenticated)])
        _ = try await Self.answer(vc, count: 1, result: 0x0000)
        _ = try await task.value
    }

    @Test func aSecondRefusalIsThrownAsItCameAndAuthorizationIsNotRetried() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let raiser = Raiser()
        await connection.setSecurityRaiser(raiser.raise)
        // Key size on a plain link: encryption with a 16-octet key asked once, the request asked
        // once more, refused again: that refusal is thrown.
        let sixteen = SecurityRequirement(level: .encrypted, keySize: 16)
        let task = Task { () async throws(L2CAPChannelError) -> CreditBasedChannel in try await connection.openL2CAPChannel(psm: 0x0080) }
        _ = try await Self.answer(vc, count: 1, result: 0x0007)
        _ = try await Self.answer(vc, count: 2, result: 0x0007)
        await #expect(throws: L2CAPChannelError.refused(peer: Self.peerName, psm: 0x0080, result: .insufficientEncryptionKeySize)) { try await task.result.get() }
        #expect(raiser.asked.withLock { $0 } == [sixteen])
        // Authorization (0x0006) is the peer's decision: no raise, no second request.
        let other = vc.task { () async throws(L2CAPChannelError) -> CreditBasedChannel in try await connection.openL2CAPChannel(psm: 0x0082) }
        _ = try await Self.answer(vc, count: 3, result: 0x0006)
        await #expect(throws: L2CAPChannelError.refused(peer: Self.peerName, psm: 0x0082, result: .insufficientAuthorization)) { try await other.result.get() }
        await vc.settle()
        #expect(Self.requests(vc) == 3)
        #expect(raiser.asked.withLock { $0 } == [sixteen])
    }

    @Test func aFailingRaiserIsSecurityNeededWithItsReason() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        await connection.setSecurityRaiser(Raiser(failing: "pairing failed: Confirm Value Failed (0x04)").raise)
        let task = Task { () async throws(L2CAPChannelError) -> CreditBasedChannel in try await connection.openL2CAPChannel(psm: 0x0080) }
        _ = try await Self.answer(vc, count: 1, result: 0x0008)
        await #expect(throws: L2CAPChannelError.securityNeeded(peer: Self.peerName, psm: 0x0080, needed: .encrypted, refusal: .insufficientEncryption,
                                                         reason: "pairing failed: Confirm Value Failed (0x04)")) { try await task.result.get() }
    }

    @Test func enhancedRefusalRaisesTheLinkAndAsksOnceMore() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        let raiser = Raiser()
        await connection.setSecurityRaiser(raiser.raise)
        let task = Task { try await connection.openL2CAPChannels(psm: 0x0080, count: 2, mtu: 512, mps: 100, credits: 4) }
        for (count, result, cids) in [(1, UInt16(0x0005), [UInt16(0), 0]), (2, 0x0000, [0x0050, 0x0051])] {
            try await vc.waitUntil("enhanced request #\(count)") { _ in Self.requests(vc, code: 0x17) >= count }
            let request = vc.signalingReceived.filter { $0.code == 0x17 }[count - 1].bytes
            // 4.25: SPSM 0x0080, MTU 512, MPS 100, 4 credits, SCIDs 0x0040 and 0x0041.
            #expect(request == [0x17, UInt8(count), 0x0C, 0x00, 0x80, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00, 0x40, 0x00, 0x41, 0x00])
            try vc.sendSignaling(from: VC.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
                mtu: 256, mps: 64, initialCredits: 3, result: result, destinationCIDs: cids)))
        }
        #expect(try await task.value.map(\.remoteCID) == [0x0050, 0x0051])
        #expect(raiser.asked.withLock { $0 } == [SecurityRequirement(level: .encrypted)])
    }

    /// A link encrypted at `level` with a `keySize`-octet key (read back with
    /// HCI_Read_Encryption_Key_Size), with a recording raiser.
    static func encryptedLink(level: SecurityLevel = .encrypted, keySize: UInt8) async throws -> (VirtualController, Connection, Raiser) {
        let (vc, central) = try await VC.stack { $0.encryptionKeySize = keySize }
        let connection = try await central.connect(VC.peer)
        vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting)
        try await connection.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: level)
        #expect(await connection.encryptionKeySize == Int(keySize))
        let raiser = Raiser()
        await connection.setSecurityRaiser(raiser.raise)
        return (vc, connection, raiser)
    }

    /// 0x0008 on an encrypted link: a MITM-protected key does not cure it, so nothing is
    /// raised and the request is not sent again; the error says the link is encrypted already.
    @Test func insufficientEncryptionOnAnEncryptedLinkRaisesNothing() async throws {
        let (vc, connection, raiser) = try await Self.encryptedLink(keySize: 16)
        let task = Task { () async throws(L2CAPChannelError) -> CreditBasedChannel in
            try await connection.openL2CAPChannel(psm: 0x0080, mtu: 512, mps: 100, credits: 4)
        }
        let request = try await Self.answer(vc, count: 1, result: 0x0008)
        #expect(request == [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        let expected = L2CAPChannelError.refusedDespiteSecurity(peer: Self.peerName, psm: 0x0080, result: .insufficientEncryption,
                                                                level: .encrypted, keySize: 16)
        await #expect(throws: expected) { try await task.result.get() }
        #expect("\(expected)" == "\(Self.peerName) refused the L2CAP channel to PSM 0x0080: insufficient encryption (0x0008) on a link already encrypted with a 16-octet key; no pairing this side can start changes that answer; if the peer wants a MITM-protected key, open the channel with security: .authenticated")
        await vc.settle()
        #expect(Self.requests(vc) == 1)
        #expect(raiser.asked.withLock { $0 }.isEmpty)
    }

    /// 0x0007 with a 7-octet key: the same level with a 16-octet key, asked once, then the
    /// same request again (identifier 2).
    @Test func aShortKeyIsPairedAgainForSixteenOctetsOnce() async throws {
        let (vc, connection, raiser) = try await Self.encryptedLink(level: .authenticated, keySize: 7)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080, mtu: 512, mps: 100, credits: 4) }
        let first = try await Self.answer(vc, count: 1, result: 0x0007)
        let second = try await Self.answer(vc, count: 2, result: 0x0000)
        #expect(try await task.value.remoteCID == 0x0050)
        #expect(first == [0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        #expect(second == [0x14, 0x02, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x00, 0x02, 0x64, 0x00, 0x04, 0x00])
        #expect(raiser.asked.withLock { $0 } == [SecurityRequirement(level: .authenticated, keySize: 16)])
    }

    /// 0x0007 with a 16-octet key: no pairing gives a longer one.
    @Test func aSixteenOctetKeyRefusedRaisesNothing() async throws {
        let (vc, connection, raiser) = try await Self.encryptedLink(keySize: 16)
        let task = Task { () async throws(L2CAPChannelError) -> CreditBasedChannel in try await connection.openL2CAPChannel(psm: 0x0080) }
        _ = try await Self.answer(vc, count: 1, result: 0x0007)
        let expected = L2CAPChannelError.refusedDespiteSecurity(peer: Self.peerName, psm: 0x0080, result: .insufficientEncryptionKeySize,
                                                                level: .encrypted, keySize: 16)
        await #expect(throws: expected) { try await task.result.get() }
        #expect("\(expected)".hasSuffix("insufficient encryption key size (0x0007) on a link already encrypted with a 16-octet key; no pairing this side can start changes that answer; the peer asks for more than the specification allows (its security settings for this PSM are wrong)"))
        await vc.settle()
        #expect(Self.requests(vc) == 1)
        #expect(raiser.asked.withLock { $0 }.isEmpty)
    }

    /// 0x0005 on an encrypted link still asks for a MITM-protected key, as GATT does.
    @Test func insufficientAuthenticationOnAnEncryptedLinkAsksForAuthentication() async throws {
        let (vc, connection, raiser) = try await Self.encryptedLink(keySize: 16)
        let task = Task { try await connection.openL2CAPChannel(psm: 0x0080) }
        _ = try await Self.answer(vc, count: 1, result: 0x0005)
        _ = try await Self.answer(vc, count: 2, result: 0x0000)
        _ = try await task.value
        #expect(raiser.asked.withLock { $0 } == [SecurityRequirement(level: .authenticated)])
    }
}
