/// Every Attribute Protocol PDU (Core Spec 5.4, Vol 3, Part F, 3.4), decoded from and encoded
/// to the bytes of one L2CAP SDU (opcode then parameters). Opcodes this version does not
/// define decode to `.unknown`; bad lengths give a `DecodeError`.
///
///     let pdu = try ATTPDU(bytes: [0x0A, 0x03, 0x00])   // .readRequest(handle: 0x0003)
///     pdu.bytes                                          // [0x0A, 0x03, 0x00]
public enum ATTPDU: Hashable, Sendable {
    /// 3.4.1.1 Error Response (0x01): the request that failed, the handle in error, the code.
    case errorResponse(request: ATTOpcode, handle: UInt16, error: ATTErrorCode)
    /// 3.4.2.1 Exchange MTU Request (0x02).
    case exchangeMTURequest(clientRxMTU: UInt16)
    /// 3.4.2.2 Exchange MTU Response (0x03).
    case exchangeMTUResponse(serverRxMTU: UInt16)
    /// 3.4.3.1 Find Information Request (0x04).
    case findInformationRequest(ATTHandleRange)
    /// 3.4.3.2 Find Information Response (0x05). Entries are written in `format`'s width.
    case findInformationResponse(format: ATTFindInformationFormat, entries: [ATTHandleUUID])
    /// 3.4.3.3 Find By Type Value Request (0x06). `type` is a 16-bit UUID on the wire.
    case findByTypeValueRequest(range: ATTHandleRange, type: BluetoothUUID, value: [UInt8])
    /// 3.4.3.4 Find By Type Value Response (0x07): Found Attribute Handle / Group End Handle pairs.
    case findByTypeValueResponse([ATTHandleRange])
    /// 3.4.4.1 Read By Type Request (0x08). `type` is 16- or 128-bit on the wire.
    case readByTypeRequest(range: ATTHandleRange, type: BluetoothUUID)
    /// 3.4.4.2 Read By Type Response (0x09). All values have the same length.
    case readByTypeResponse([ATTHandleValue])
    /// 3.4.4.3 Read Request (0x0A).
    case readRequest(handle: UInt16)
    /// 3.4.4.4 Read Response (0x0B).
    case readResponse(value: [UInt8])
    /// 3.4.4.5 Read Blob Request (0x0C).
    case readBlobRequest(handle: UInt16, offset: UInt16)
    /// 3.4.4.6 Read Blob Response (0x0D): part of the value.
    case readBlobResponse(value: [UInt8])
    /// 3.4.4.7 Read Multiple Request (0x0E): two or more handles.
    case readMultipleRequest(handles: [UInt16])
    /// 3.4.4.8 Read Multiple Response (0x0F): the values concatenated (the client knows their lengths).
    case readMultipleResponse(values: [UInt8])
    /// 3.4.4.9 Read By Group Type Request (0x10). `type` is 16- or 128-bit on the wire.
    case readByGroupTypeRequest(range: ATTHandleRange, type: BluetoothUUID)
    /// 3.4.4.10 Read By Group Type Response (0x11). All values have the same length.
    case readByGroupTypeResponse([ATTGroupValue])
    /// 3.4.4.11 Read Multiple Variable Request (0x20): two or more handles.
    case readMultipleVariableRequest(handles: [UInt16])
    /// 3.4.4.12 Read Multiple Variable Response (0x21).
    case readMultipleVariableResponse([ATTLengthValue])
    /// 3.4.5.1 Write Request (0x12).
    case writeRequest(handle: UInt16, value: [UInt8])
    /// 3.4.5.2 Write Response (0x13).
    case writeResponse
    /// 3.4.5.3 Write Command (0x52).
    case writeCommand(handle: UInt16, value: [UInt8])
    /// 3.4.5.4 Signed Write Command (0xD2).
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: ATTSignature)
    /// 3.4.6.1 Prepare Write Request (0x16).
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: [UInt8])
    /// 3.4.6.2 Prepare Write Response (0x17): the request's fields echoed.
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: [UInt8])
    /// 3.4.6.3 Execute Write Request (0x18).
    case executeWriteRequest(ATTExecuteWriteFlags)
    /// 3.4.6.4 Execute Write Response (0x19).
    case executeWriteResponse
    /// 3.4.7.1 Handle Value Notification (0x1B).
    case handleValueNotification(handle: UInt16, value: [UInt8])
    /// 3.4.7.2 Handle Value Indication (0x1D).
    case handleValueIndication(handle: UInt16, value: [UInt8])
    /// 3.4.7.3 Handle Value Confirmation (0x1E).
    case handleValueConfirmation
    /// 3.4.7.4 Multiple Handle Value Notification (0x23).
    case multipleHandleValueNotification([ATTHandleValue])
    /// An opcode this specification version does not define, kept as is.
    case unknown(opcode: UInt8, parameters: [UInt8])

    /// The PDU's opcode.
    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: return .errorResponse
        case .exchangeMTURequest: return .exchangeMTURequest
        case .exchangeMTUResponse: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationRequest
        case .findInformationResponse: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueRequest
        case .findByTypeValueResponse: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeRequest
        case .readByTypeResponse: return .readByTypeResponse
        case .readRequest: return .readRequest
        case .readResponse: return .readResponse
        case .readBlobRequest: return .readBlobRequest
        case .readBlobResponse: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleRequest
        case .readMultipleResponse: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeRequest
        case .readByGroupTypeResponse: return .readByGroupTypeResponse
        case .readMultipleVariableRequest: return .readMultipleVariableRequest
        case .readMultipleVariableResponse: return .readMultipleVariableResponse
        case .writeRequest: return .writeRequest
        case .writeResponse: return .writeResponse
        case .writeCommand: return .writeCommand
        case .signedWriteCommand: return .signedWriteCommand
        case .prepareWriteRequest: return .prepareWriteRequest
        case .prepareWriteResponse: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteRequest
        case .executeWriteResponse: return .executeWriteResponse
        case .handleValueNotification: return .handleValueNotification
        case .handleValueIndication: return .handleValueIndication
        case .handleValueConfirmation: return .handleValueConfirmation
        case .multipleHandleValueNotification: return .multipleHandleValueNotification
        case .unknown(let opcode, _): return ATTOpcode(opcode)
        }
    }

    /// The attribute handle the PDU is about, when it names exactly one (used in error texts).
    public var handle: UInt16? {
        switch self {
        case .errorResponse(_, let h, _), .readRequest(let h), .readBlobRequest(let h, _),
             .writeRequest(let h, _), .writeCommand(let h, _), .signedWriteCommand(let h, _, _),
             .prepareWriteRequest(let h, _, _), .prepareWriteResponse(let h, _, _),
             .handleValueNotification(let h, _), .handleValueIndication(let h, _):
            return h
        case .findInformationRequest(let r), .findByTypeValueRequest(let r, _, _),
             .readByTypeRequest(let r, _), .readByGroupTypeRequest(let r, _):
            return r.start
        default:
            return nil
        }
    }
}
