import Testing
import ATT
import BLECore
import GATTClient

/// Which level the Peripheral raises the link to when the peer refuses a request for lack of
/// security (Vol 3, Part F, 3.4.1.1 error codes; Vol 3, Part C, 10.3.2), and when it leaves
/// the error alone because no level would cure it.
@Suite struct SecurityRetryLevelTests {
    @Test(arguments: [ATTErrorCode.insufficientEncryption, .insufficientAuthentication, .encryptionKeySizeTooShort])
    func anUnencryptedLinkIsEncryptedFirst(code: ATTErrorCode) {
        #expect(Peripheral.levelToRaise(refusedWith: code, at: .none) == .encrypted)
    }

    @Test func insufficientAuthenticationOnAnEncryptedLinkAsksForAStrongerKey() {
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .encrypted) == .authenticated)
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .authenticated) == .secureConnections)
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthentication, at: .secureConnections) == nil)
    }

    /// A MITM-protected key does not cure Insufficient Encryption or a short key on a link
    /// that is already encrypted: no pairing is started for them (a person would be asked for
    /// a passkey for nothing, and a failed attempt counts against repeated attempts).
    @Test(arguments: [SecurityLevel.encrypted, .authenticated, .secureConnections])
    func encryptionErrorsOnAnEncryptedLinkAreLeftAlone(level: SecurityLevel) {
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientEncryption, at: level) == nil)
        #expect(Peripheral.levelToRaise(refusedWith: .encryptionKeySizeTooShort, at: level) == nil)
    }

    @Test func otherErrorsAreNotAboutSecurity() {
        #expect(Peripheral.levelToRaise(refusedWith: .readNotPermitted, at: .none) == nil)
        #expect(Peripheral.levelToRaise(refusedWith: .insufficientAuthorization, at: .none) == nil)
    }
}
