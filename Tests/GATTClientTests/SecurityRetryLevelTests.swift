import Testing
import ATT
import BLECore
import GATTClient
import BLEWire

/// Which level (and key size) the Peripheral raises the link to when the peer refuses a
/// request for lack of security (Vol 3, Part F, 3.4.1.1 error codes; Vol 3, Part C, 10.3.2),
/// and when it leaves the error alone because no level would cure it.
@Suite struct SecurityRetryLevelTests {
    @Test(arguments: [ATTErrorCode.insufficientEncryption, .insufficientAuthentication])
    func anUnencryptedLinkIsEncryptedFirst(code: ATTErrorCode) {
        #expect(Peripheral.levelToRaise(refusedWith: code, at: .none) == SecurityRequirement(level: .encrypted))
    }

    @Test func insufficientAuthenticationOnAnEncryptedLinkAsksForAStrongerKey() {
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .encrypted) == SecurityRequirement(level: .authenticated))
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .authenticated) == SecurityRequirement(level: .secureConnections))
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .secureConnections) == nil)
    }

    /// A MITM-protected key does not cure Insufficient Encryption on a link that is already
    /// encrypted: no pairing is started for it (a person would be asked for a passkey for
    /// nothing, and a failed attempt counts against repeated attempts).
    @Test(arguments: [SecurityLevel.encrypted, .authenticated, .secureConnections])
    func insufficientEncryptionOnAnEncryptedLinkIsLeftAlone(level: SecurityLevel) {
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientEncryption, at: level, keySize: 7) == nil)
    }

    /// Encryption Key Size Too Short: the same level (encrypted at least) with a 16-octet key,
    /// nothing once the key is 16 octets.
    @Test func aShortKeyAsksForSixteenOctetsAtTheSameLevel() {
        #expect(Peripheral.levelToRaise(refusedWith: .encryptionKeySizeTooShort, at: .none) == SecurityRequirement(level: .encrypted, keySize: 16))
        #expect(Peripheral.levelToRaise(refusedWith: .encryptionKeySizeTooShort, at: .authenticated, keySize: 7) == SecurityRequirement(level: .authenticated, keySize: 16))
        #expect(Peripheral.levelToRaise(refusedWith: .encryptionKeySizeTooShort, at: .encrypted, keySize: 16) == nil)
    }

    @Test func otherErrorsAreNotAboutSecurity() {
        #expect(Peripheral.levelToRaise(refusedWith: .readNotPermitted, at: .none) == nil)
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthorization, at: .none) == nil)
    }
}
