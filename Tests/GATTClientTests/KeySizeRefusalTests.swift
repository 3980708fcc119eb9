import Testing
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire

/// Encryption Key Size Too Short (0x0C) on a real link whose key size the host knows: the
/// link is encrypted through the in-process controller (LE Enable Encryption answered with
/// Command Status and Encryption Change v1, Vol 4, Part E, 7.7.15 and 7.7.8), and the key size
/// comes from the controller's answer to HCI_Read_Encryption_Key_Size (7.5.7): 16 octets.
@Suite(.timeLimit(.minutes(1)))
struct KeySizeRefusalTests {
    /// A 16-octet key cannot grow: no pairing is tried, and the error names the peer, the
    /// attribute, its handle and the key size.
    @Test func aSixteenOctetKeyRefusedIsATypedErrorWithoutPairing() async throws {
        let bed = try await LabBed()
        bed.vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting)
        try await bed.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        #expect(await bed.link.encryptionKeySize == 16)
        let raised = LevelLog()
        await bed.peripheral.setSecurityRaiser { level, size in raised.append(level, size) }
        let handle = try await bed.peripheral.resolve(Lab.scratch).valueHandle
        // The peer answers the Read Request with Error Response (Vol 3, Part F, 3.4.1.1):
        // opcode 0x01, request 0x0A, the handle, Encryption Key Size Too Short.
        let faults = bed.faults
        faults.on(.readRequest) { faults.sendToCentrals([0x01, 0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x0C]) }
        do {
            _ = try await bed.peripheral.read(Lab.scratch)
            Issue.record("the read went through")
        } catch {
            #expect(error == .securityNeeded(attribute: .encryptionKeySizeTooShort, needed: .encrypted, operation: .reading,
                                             target: .attribute(Lab.scratch.uuid, handle: handle), peer: bed.peripheral.peerAddress,
                                             reason: .keySizeRefused(keySize: 16)))
            #expect(error.description.hasSuffix("on C0:11:22:33:44:77 with a 16-octet key, the longest there is: no pairing can satisfy the peer; the peer's attribute permissions are wrong, report it to the device's maker"))
        }
        #expect(raised.all.isEmpty)
        await bed.central.close()
    }
}
