import Testing
import BLECore
import BLEWire

/// The one rule for what to raise after a refusal for lack of security (Vol 3, Part C, 10.3.2),
/// shared by GATT (ATT 0x05, 0x0F, 0x0C) and LE credit-based channels (results 0x0005, 0x0008,
/// 0x0007; Vol 3, Part A, 4.23).
@Suite struct SecurityRefusalRuleTests {
    @Test func insufficientAuthenticationStepsUpToSecureConnections() {
        #expect(SecurityLevel.none.toAsk(after: .insufficientAuthentication, keySize: nil) == SecurityRequirement(level: .encrypted))
        #expect(SecurityLevel.encrypted.toAsk(after: .insufficientAuthentication, keySize: 16) == SecurityRequirement(level: .authenticated))
        #expect(SecurityLevel.authenticated.toAsk(after: .insufficientAuthentication, keySize: 16) == SecurityRequirement(level: .secureConnections))
        #expect(SecurityLevel.secureConnections.toAsk(after: .insufficientAuthentication, keySize: 16) == nil)
    }

    /// Insufficient Encryption is cured by encrypting, never by a MITM-protected key.
    @Test(arguments: [SecurityLevel.encrypted, .authenticated, .secureConnections])
    func insufficientEncryptionOnAnEncryptedLinkAsksForNothing(level: SecurityLevel) {
        #expect(SecurityLevel.none.toAsk(after: .insufficientEncryption, keySize: nil) == SecurityRequirement(level: .encrypted))
        #expect(level.toAsk(after: .insufficientEncryption, keySize: 7) == nil)
        #expect(level.toAsk(after: .insufficientEncryption, keySize: nil) == nil)
    }

    /// The key, not the level, is short: the same level with 16 octets (Vol 3, Part H, 2.3.4),
    /// also when the controller did not say the size; nothing once it is 16.
    @Test func aShortKeyAsksForSixteenOctetsOnce() {
        #expect(SecurityLevel.none.toAsk(after: .insufficientEncryptionKeySize, keySize: nil) == SecurityRequirement(level: .encrypted, keySize: 16))
        #expect(SecurityLevel.encrypted.toAsk(after: .insufficientEncryptionKeySize, keySize: 7) == SecurityRequirement(level: .encrypted, keySize: 16))
        #expect(SecurityLevel.secureConnections.toAsk(after: .insufficientEncryptionKeySize, keySize: nil) == SecurityRequirement(level: .secureConnections, keySize: 16))
        #expect(SecurityLevel.authenticated.toAsk(after: .insufficientEncryptionKeySize, keySize: 16) == nil)
    }

    /// Result codes of the (LE) Credit Based Connection Response: authorization (0x0006) is the
    /// peer's decision, never a security refusal.
    @Test func channelResultsMapToRefusals() {
        #expect(CreditBasedConnectionResult(rawValue: 0x0005).securityRefusal == .insufficientAuthentication)
        #expect(CreditBasedConnectionResult(rawValue: 0x0006).securityRefusal == nil)
        #expect(CreditBasedConnectionResult(rawValue: 0x0007).securityRefusal == .insufficientEncryptionKeySize)
        #expect(CreditBasedConnectionResult(rawValue: 0x0008).securityRefusal == .insufficientEncryption)
        #expect(CreditBasedConnectionResult(rawValue: 0x0004).securityRefusal == nil)
    }

    @Test func aRequirementIsMetByTheLevelAndTheKeySize() {
        let needed = SecurityRequirement(level: .encrypted, keySize: 16)
        #expect(needed.isMet(at: .authenticated, keySize: 16))
        #expect(!needed.isMet(at: .authenticated, keySize: 7))
        #expect(!needed.isMet(at: .encrypted, keySize: nil))
        #expect(!needed.isMet(at: .none, keySize: nil))
        #expect(SecurityRequirement(level: .encrypted).isMet(at: .encrypted, keySize: nil))
        #expect("\(needed)" == "encrypted with a 16-octet key")
    }
}
