import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// The central's identity keys (Vol 3, Part H, 3.6.4 Identity Information, code 0x08, the IRK
/// least significant octet first; 3.6.5 Identity Address Information, code 0x09, AddrType 0x00
/// public / 0x01 static random, BD_ADDR least significant octet first): with
/// `PairingOptions.localIdentity` the peer gets this side's IRK and identity address, so it
/// resolves the central's resolvable private addresses.
@Suite(.timeLimit(.minutes(1)))
struct LocalIdentityTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    /// The IRK of the ah example, Vol 3, Part H, Appendix D.7.
    static let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B

    @Test func identityKeysCarryTheLocalIRKAndPublicIdentityAddress() async throws {
        let fixture = try await SMPLinkFixture(peer: Self.peer)
        let sm = try await fixture.link.securityManager()
        let identity = LocalIdentity(irk: Self.irk, address: LEAddress(BluetoothAddress("00:1B:DC:0F:00:01")!, type: .public))
        _ = await sm.sendKeys([.identityKey], sc: true, keySize: 16, model: .justWorks, identity: identity)
        let sent = try await fixture.smpSent(count: 2)
        #expect(sent[0] == [0x08, 0x9B, 0x7D, 0x39, 0x0A, 0xA6, 0x10, 0x10, 0x34, 0x05, 0xAD, 0xC8, 0x57, 0xA3, 0x34, 0x02, 0xEC])
        #expect(sent[1] == [0x09, 0x00, 0x01, 0x00, 0x0F, 0xDC, 0x1B, 0x00])
    }

    @Test func aStaticRandomIdentityIsAddressType1() async throws {
        let fixture = try await SMPLinkFixture(peer: Self.peer)
        let sm = try await fixture.link.securityManager()
        let identity = LocalIdentity(irk: Self.irk, address: LEAddress(BluetoothAddress("C4:5E:B1:00:00:01")!, type: .random))
        _ = await sm.sendKeys([.identityKey], sc: true, keySize: 16, model: .justWorks, identity: identity)
        let sent = try await fixture.smpSent(count: 2)
        #expect(sent[1] == [0x09, 0x01, 0x01, 0x00, 0x00, 0xB1, 0x5E, 0xC4])
    }
}
