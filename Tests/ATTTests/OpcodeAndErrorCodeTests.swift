import Testing
import ATT
import BLEWire

/// Opcode values, flags and names from Core Spec 5.4, Vol 3, Part F, 3.3.1 and 3.4.8
/// (Table 3.37); error codes from 3.4.1.1 (Table 3.4) and the Core Specification Supplement,
/// Part B, 1.2.
@Suite struct OpcodeAndErrorCodeTests {
    @Test func flags() {
        #expect(ATTOpcode.writeCommand.isCommand && !ATTOpcode.writeCommand.isSigned)
        #expect(ATTOpcode.signedWriteCommand.isCommand && ATTOpcode.signedWriteCommand.isSigned)
        #expect(!ATTOpcode.writeRequest.isCommand && !ATTOpcode.writeRequest.isSigned)
        #expect(ATTOpcode.writeCommand.method == ATTOpcode.writeRequest.method)
        #expect(ATTOpcode.signedWriteCommand.method == 0x12)
    }

    @Test func requestResponsePairs() {
        let pairs: [(UInt8, UInt8)] = [(0x02, 0x03), (0x04, 0x05), (0x06, 0x07), (0x08, 0x09), (0x0A, 0x0B), (0x0C, 0x0D),
                                       (0x0E, 0x0F), (0x10, 0x11), (0x12, 0x13), (0x16, 0x17), (0x18, 0x19), (0x20, 0x21)]
        for (req, rsp) in pairs {
            #expect(ATTOpcode(req).kind == .request)
            #expect(ATTOpcode(rsp).kind == .response)
            #expect(ATTOpcode(req).responseOpcode == ATTOpcode(rsp))
            #expect(ATTOpcode(rsp).requestOpcode == ATTOpcode(req))
        }
        #expect(ATTOpcode.handleValueIndication.responseOpcode == .handleValueConfirmation)
        #expect(ATTOpcode.handleValueNotification.responseOpcode == nil)
        #expect(ATTOpcode.writeCommand.responseOpcode == nil)
        #expect(ATTOpcode.errorResponse.kind == .response && ATTOpcode.errorResponse.requestOpcode == nil)
        #expect(ATTOpcode(0x14).kind == .unknown && ATTOpcode(0x14).responseOpcode == nil)
        #expect(ATTOpcode(0x7F).kind == .command)
    }

    @Test func opcodeNames() {
        #expect(ATTOpcode.readByGroupTypeRequest.description == "Read By Group Type Request (0x10)")
        #expect(ATTOpcode.multipleHandleValueNotification.name == "Multiple Handle Value Notification")
        #expect(ATTOpcode.readMultipleVariableResponse.name == "Read Multiple Variable Response")
        #expect(ATTOpcode.signedWriteCommand.description == "Signed Write Command (0xD2)")
        #expect(ATTOpcode(0x14).description == "Unknown ATT PDU (0x14)")
    }

    @Test func errorCodeNames() {
        let table: [(UInt8, String)] = [
            (0x01, "Invalid Handle"), (0x02, "Read Not Permitted"), (0x03, "Write Not Permitted"), (0x04, "Invalid PDU"),
            (0x05, "Insufficient Authentication"), (0x06, "Request Not Supported"), (0x07, "Invalid Offset"),
            (0x08, "Insufficient Authorization"), (0x09, "Prepare Queue Full"), (0x0A, "Attribute Not Found"),
            (0x0B, "Attribute Not Long"), (0x0C, "Encryption Key Size Too Short"), (0x0D, "Invalid Attribute Value Length"),
            (0x0E, "Unlikely Error"), (0x0F, "Insufficient Encryption"), (0x10, "Unsupported Group Type"),
            (0x11, "Insufficient Resources"), (0x12, "Database Out Of Sync"), (0x13, "Value Not Allowed"),
            (0x80, "Application Error"), (0x9F, "Application Error"),
            (0xFC, "Write Request Rejected"),
            (0xFD, "Client Characteristic Configuration Descriptor Improperly Configured"),
            (0xFE, "Procedure Already in Progress"), (0xFF, "Out of Range"),
            (0x00, "Reserved"), (0x14, "Reserved"), (0xA0, "Reserved"), (0xE0, "Reserved Common Profile Error"),
        ]
        for (code, name) in table { #expect(ATTErrorCode(code).name == name) }
        #expect(ATTErrorCode.databaseOutOfSync.description == "Database Out Of Sync (0x12)")
        #expect(ATTErrorCode(0x85).isApplicationError && !ATTErrorCode(0x85).isCommonProfileError)
        #expect(ATTErrorCode.outOfRange.isCommonProfileError && ATTErrorCode.outOfRange == ATTErrorCode(0xFF))
        #expect(ATTErrorCode.cccdImproperlyConfigured.rawValue == 0xFD)
        #expect(ATTErrorCode.writeRequestRejected.rawValue == 0xFC)
        #expect(ATTErrorCode.procedureAlreadyInProgress.rawValue == 0xFE)
    }

    @Test func errorTexts() {
        let e = ATTError.errorResponse(code: .insufficientAuthentication, handle: 0x0003, request: .readRequest)
        #expect(e.description.hasPrefix("Read Request on handle 0x0003 failed: Insufficient Authentication (0x05)"))
        #expect(ATTError.errorResponse(code: .attributeNotFound, handle: 0x0001, request: .readByTypeRequest).description
            == "Read By Type Request on handle 0x0001 failed: Attribute Not Found (0x0A)")
        #expect(ATTError.transactionTimeout(.writeRequest).description.hasPrefix("Write Request got no response"))
        #expect(ATTError.linkClosed(.disconnected(peer: BluetoothAddress("F0:F1:F2:F3:F4:F5")!, reason: .connectionTimeout)).description
            .contains("F0:F1:F2:F3:F4:F5 disconnected"))
        #expect(ATTError.unexpectedResponse(request: .readRequest, response: .writeResponse).description
            .contains("Read Request was answered with Write Response (0x13)"))
        #expect(ATTError.pduTooLarge(.writeCommand, size: 30, mtu: 23).description.contains("ATT_MTU of 23"))
    }
}
