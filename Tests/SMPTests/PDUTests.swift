import Testing
import BLECore
@testable import SMP
import BLEWire

/// SMP PDUs against the layouts of Core Spec 5.4 Vol 3, Part H, 3.5 and 3.6. The pairing
/// request and response bytes are the ones of the c1 example (2.2.3).
struct PDUTests {
    @Test func pairingRequestAndResponseFromTheC1Example() throws {
        let request = try SMPPDU(bytes: [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07])
        #expect(request == .pairingRequest(PairingParameters(ioCapability: .displayYesNo, oobDataFlag: 0, authReq: [], maximumEncryptionKeySize: 16,
                                                             initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
                                                             responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey])))
        let response = try SMPPDU(bytes: [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05])
        #expect(response == .pairingResponse(PairingParameters(ioCapability: .noInputNoOutput, authReq: [], maximumEncryptionKeySize: 8,
                                                               initiatorKeyDistribution: [], responderKeyDistribution: [.encryptionKey, .signingKey])))
        #expect(request.bytes == [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07])
        #expect(response.bytes == [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05])
    }

    @Test func authReqBits() throws {
        // Bonding_Flags 01, MITM, SC, Keypress, CT2 (3.5.1, Figure 3.3).
        #expect(try SMPPDU(bytes: [0x0B, 0x2D]) == .securityRequest([.bonding, .mitm, .secureConnections, .ct2]))
        #expect(SMPPDU.securityRequest([.bonding, .mitm, .secureConnections, .keypress]).bytes == [0x0B, 0x1D])
    }

    @Test func valuesAreLeastSignificantOctetFirst() throws {
        let bytes: [UInt8] = [0x03] + (0..<16).map { UInt8($0) }
        #expect(try SMPPDU(bytes: bytes) == .pairingConfirm(0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100))
        #expect(try SMPPDU(bytes: [0x07, 0x34, 0x12, 1, 2, 3, 4, 5, 6, 7, 8]) == .centralIdentification(ediv: 0x1234, rand: 0x0807_0605_0403_0201))
        #expect(try SMPPDU(bytes: [0x09, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0xC6])
                == .identityAddressInformation(addressType: 1, address: BluetoothAddress("C6:05:04:03:02:01")!))
        #expect(try SMPPDU(bytes: [0x05, 0x01]) == .pairingFailed(.passkeyEntryFailed))
        #expect(try SMPPDU(bytes: [0x0E, 0x04]) == .pairingKeypressNotification(.passkeyEntryCompleted))
    }

    @Test func publicKeyCoordinatesAreReversedOnTheAir() throws {
        let x = (0..<32).map { UInt8($0) }, y = (0..<32).map { UInt8(0x80 + $0) }
        let pdu = SMPPDU.pairingPublicKey(P256PublicKey(x: x, y: y)!)
        #expect(pdu.bytes == [0x0C] + x.reversed() + y.reversed())
        #expect(try SMPPDU(bytes: pdu.bytes) == pdu)
    }

    @Test func everyCodeRoundTrips() throws {
        for code in SMPCode.allCases {
            let bytes = [code.rawValue] + (0..<code.parameterLength).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(try SMPPDU(bytes: bytes).bytes == bytes, "code 0x\(String(code.rawValue, radix: 16))")
        }
    }

    @Test func malformedPDUsAreTypedErrors() {
        #expect(throws: SMPDecodeError.empty) { try SMPPDU(bytes: []) }
        #expect(throws: SMPDecodeError.unknownCode(0x00)) { try SMPPDU(bytes: [0x00]) }
        #expect(throws: SMPDecodeError.unknownCode(0x0F)) { try SMPPDU(bytes: [0x0F, 0x00]) }
        #expect(throws: SMPDecodeError.wrongLength(code: .pairingRequest, expected: 6, actual: 5)) { try SMPPDU(bytes: [0x01, 0x01, 0x00, 0x00, 0x10, 0x07]) }
        #expect(throws: SMPDecodeError.wrongLength(code: .pairingFailed, expected: 1, actual: 0)) { try SMPPDU(bytes: [0x05]) }
        #expect(throws: SMPDecodeError.wrongLength(code: .pairingPublicKey, expected: 64, actual: 65)) { try SMPPDU(bytes: [0x0C] + [UInt8](repeating: 1, count: 65)) }
        #expect(throws: SMPDecodeError.wrongLength(code: .pairingConfirm, expected: 16, actual: 15)) { try SMPPDU(bytes: [0x03] + [UInt8](repeating: 1, count: 15)) }
    }

    @Test func reasonNamesFollowTheSpecification() {
        #expect(PairingFailedReason.passkeyEntryFailed.description == "Passkey Entry Failed (0x01)")
        #expect(PairingFailedReason.dhKeyCheckFailed.description == "DHKey Check Failed (0x0B)")
        #expect(PairingFailedReason(rawValue: 0x42).description == "Reserved (0x42)")
    }
}
