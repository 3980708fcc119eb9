import Testing
import ATT
import BLEWire

/// Byte examples written by hand from the PDU field layouts of Core Spec 5.4, Vol 3, Part F,
/// 3.4 (opcode, then each parameter little-endian in table order). Values are typical GATT
/// ones (0x2800 Primary Service, 0x2803 Characteristic, 0x2902 CCCD, 0x180D Heart Rate...).
struct PDUExample: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let pdu: ATTPDU
    var testDescription: String { pdu.opcode.description + ": " + bytes.hexString() }
}

/// 6E400001-B5A3-F393-E0A9-E50E24DCCA9E, least significant octet first.
let uartUUIDBytes: [UInt8] = [0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0, 0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E]
let uartUUID = BluetoothUUID(uuid128: 0x6E400001_B5A3_F393_E0A9_E50E24DCCA9E)

let examples: [PDUExample] = [
    // 3.4.1.1 Error Response: Request Opcode, Attribute Handle In Error, Error Code.
    .init(bytes: [0x01, 0x0A, 0x03, 0x00, 0x05],
          pdu: .errorResponse(request: .readRequest, handle: 0x0003, error: .insufficientAuthentication)),
    // 3.4.2.1 / 3.4.2.2: Client Rx MTU 517, Server Rx MTU 247.
    .init(bytes: [0x02, 0x05, 0x02], pdu: .exchangeMTURequest(clientRxMTU: 517)),
    .init(bytes: [0x03, 0xF7, 0x00], pdu: .exchangeMTUResponse(serverRxMTU: 247)),
    // 3.4.3.1: Starting Handle 0x0001, Ending Handle 0xFFFF.
    .init(bytes: [0x04, 0x01, 0x00, 0xFF, 0xFF], pdu: .findInformationRequest(.all)),
    // 3.4.3.2 Format 0x01: (0x0003, 0x2902), (0x0004, 0x2901).
    .init(bytes: [0x05, 0x01, 0x03, 0x00, 0x02, 0x29, 0x04, 0x00, 0x01, 0x29],
          pdu: .findInformationResponse(format: .uuid16, entries: [
              ATTHandleUUID(handle: 3, uuid: BluetoothUUID(uuid16: 0x2902)),
              ATTHandleUUID(handle: 4, uuid: BluetoothUUID(uuid16: 0x2901)),
          ])),
    // 3.4.3.2 Format 0x02: (0x0010, 128-bit UUID).
    .init(bytes: [0x05, 0x02, 0x10, 0x00] + uartUUIDBytes,
          pdu: .findInformationResponse(format: .uuid128, entries: [ATTHandleUUID(handle: 0x10, uuid: uartUUID)])),
    // 3.4.3.3: range, Attribute Type 0x2800, Attribute Value 0x180D.
    .init(bytes: [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0D, 0x18],
          pdu: .findByTypeValueRequest(range: .all, type: BluetoothUUID(uuid16: 0x2800), value: [0x0D, 0x18])),
    // 3.4.3.4: (0x0010, 0x001A), (0x0020, 0x002F).
    .init(bytes: [0x07, 0x10, 0x00, 0x1A, 0x00, 0x20, 0x00, 0x2F, 0x00],
          pdu: .findByTypeValueResponse([ATTHandleRange(start: 0x10, end: 0x1A), ATTHandleRange(start: 0x20, end: 0x2F)])),
    // 3.4.4.1 with a 16-bit and a 128-bit Attribute Type.
    .init(bytes: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28],
          pdu: .readByTypeRequest(range: .all, type: BluetoothUUID(uuid16: 0x2803))),
    .init(bytes: [0x08, 0x05, 0x00, 0x09, 0x00] + uartUUIDBytes,
          pdu: .readByTypeRequest(range: ATTHandleRange(start: 5, end: 9), type: uartUUID)),
    // 3.4.4.2: Length 7, two Characteristic declarations (properties, value handle, UUID).
    .init(bytes: [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00, 0x02, 0x05, 0x00, 0x01, 0x2A],
          pdu: .readByTypeResponse([
              ATTHandleValue(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A]),
              ATTHandleValue(handle: 4, value: [0x02, 0x05, 0x00, 0x01, 0x2A]),
          ])),
    // 3.4.4.3 - 3.4.4.6.
    .init(bytes: [0x0A, 0x03, 0x00], pdu: .readRequest(handle: 3)),
    .init(bytes: [0x0B, 0x48, 0x69], pdu: .readResponse(value: [0x48, 0x69])),
    .init(bytes: [0x0B], pdu: .readResponse(value: [])),
    .init(bytes: [0x0C, 0x03, 0x00, 0x16, 0x00], pdu: .readBlobRequest(handle: 3, offset: 22)),
    .init(bytes: [0x0D, 0x01, 0x02, 0x03], pdu: .readBlobResponse(value: [1, 2, 3])),
    // 3.4.4.7 / 3.4.4.8: Set Of Handles, Set Of Values.
    .init(bytes: [0x0E, 0x03, 0x00, 0x05, 0x00], pdu: .readMultipleRequest(handles: [3, 5])),
    .init(bytes: [0x0F, 0x01, 0x02, 0x03], pdu: .readMultipleResponse(values: [1, 2, 3])),
    // 3.4.4.9 / 3.4.4.10: Length 6, (0x0001, 0x0007, 0x1800), (0x0008, 0x000B, 0x1801).
    .init(bytes: [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
          pdu: .readByGroupTypeRequest(range: .all, type: BluetoothUUID(uuid16: 0x2800))),
    .init(bytes: [0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00, 0x18, 0x08, 0x00, 0x0B, 0x00, 0x01, 0x18],
          pdu: .readByGroupTypeResponse([
              ATTGroupValue(handle: 1, endGroupHandle: 7, value: [0x00, 0x18]),
              ATTGroupValue(handle: 8, endGroupHandle: 0x0B, value: [0x01, 0x18]),
          ])),
    // 3.4.4.11 / 3.4.4.12: Length Value Tuples; the last may be cut at ATT_MTU - 1.
    .init(bytes: [0x20, 0x03, 0x00, 0x05, 0x00, 0x07, 0x00], pdu: .readMultipleVariableRequest(handles: [3, 5, 7])),
    .init(bytes: [0x21, 0x02, 0x00, 0xAA, 0xBB, 0x01, 0x00, 0xCC, 0x00, 0x00],
          pdu: .readMultipleVariableResponse([ATTLengthValue(value: [0xAA, 0xBB]), ATTLengthValue(value: [0xCC]), ATTLengthValue(value: [])])),
    .init(bytes: [0x21, 0x01, 0x00, 0x11, 0x05, 0x00, 0x22, 0x33],
          pdu: .readMultipleVariableResponse([ATTLengthValue(value: [0x11]), ATTLengthValue(length: 5, value: [0x22, 0x33])])),
    // 3.4.5.1 - 3.4.5.4. Signed: SignCounter 1, MAC 0x1122334455667788 (Vol 3, Part H, 2.4.5).
    .init(bytes: [0x12, 0x0C, 0x00, 0x01, 0x00], pdu: .writeRequest(handle: 0x0C, value: [0x01, 0x00])),
    .init(bytes: [0x13], pdu: .writeResponse),
    .init(bytes: [0x52, 0x0E, 0x00, 0x68, 0x65], pdu: .writeCommand(handle: 0x0E, value: [0x68, 0x65])),
    .init(bytes: [0xD2, 0x0E, 0x00, 0xAB, 0x01, 0x00, 0x00, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11],
          pdu: .signedWriteCommand(handle: 0x0E, value: [0xAB], signature: ATTSignature(signCounter: 1, mac: 0x1122_3344_5566_7788))),
    .init(bytes: [0xD2, 0x0E, 0x00, 0x01, 0x00, 0x00, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11],
          pdu: .signedWriteCommand(handle: 0x0E, value: [], signature: ATTSignature(signCounter: 1, mac: 0x1122_3344_5566_7788))),
    // 3.4.6.1 - 3.4.6.4.
    .init(bytes: [0x16, 0x0E, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03], pdu: .prepareWriteRequest(handle: 0x0E, offset: 0, value: [1, 2, 3])),
    .init(bytes: [0x17, 0x0E, 0x00, 0x12, 0x00, 0x04, 0x05], pdu: .prepareWriteResponse(handle: 0x0E, offset: 0x12, value: [4, 5])),
    .init(bytes: [0x18, 0x01], pdu: .executeWriteRequest(.write)),
    .init(bytes: [0x18, 0x00], pdu: .executeWriteRequest(.cancel)),
    .init(bytes: [0x19], pdu: .executeWriteResponse),
    // 3.4.7.1 - 3.4.7.4: Heart Rate Measurement, Service Changed 0x0001-0xFFFF.
    .init(bytes: [0x1B, 0x12, 0x00, 0x00, 0x48], pdu: .handleValueNotification(handle: 0x12, value: [0x00, 0x48])),
    .init(bytes: [0x1D, 0x08, 0x00, 0x01, 0x00, 0xFF, 0xFF], pdu: .handleValueIndication(handle: 8, value: [0x01, 0x00, 0xFF, 0xFF])),
    .init(bytes: [0x1E], pdu: .handleValueConfirmation),
    .init(bytes: [0x23, 0x12, 0x00, 0x02, 0x00, 0x00, 0x48, 0x15, 0x00, 0x01, 0x00, 0x07],
          pdu: .multipleHandleValueNotification([ATTHandleValue(handle: 0x12, value: [0x00, 0x48]), ATTHandleValue(handle: 0x15, value: [0x07])])),
    // Opcodes the specification does not define.
    .init(bytes: [0x14, 0x01, 0x02], pdu: .unknown(opcode: 0x14, parameters: [1, 2])),
    .init(bytes: [0x3F], pdu: .unknown(opcode: 0x3F, parameters: [])),
]

@Suite struct PDUTests {
    @Test(arguments: examples)
    func decodesAndEncodesByteExact(_ example: PDUExample) throws {
        let decoded = try ATTPDU(bytes: example.bytes)
        #expect(decoded == example.pdu)
        #expect(decoded.bytes == example.bytes)
        #expect(example.pdu.bytes == example.bytes)
        #expect(decoded.opcode.rawValue == example.bytes[0])
    }

    @Test func everyDefinedOpcodeHasAnExample() {
        let covered = Set(examples.map { $0.bytes[0] })
        let defined: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
                                0x10, 0x11, 0x12, 0x13, 0x16, 0x17, 0x18, 0x19, 0x1B, 0x1D, 0x1E, 0x20, 0x21, 0x23, 0x52, 0xD2]
        for op in defined {
            #expect(covered.contains(op), "no example for \(ATTOpcode(op))")
            #expect(ATTOpcode(op).kind != .unknown)
        }
    }

    @Test func uuidWidthsSurviveDecoding() throws {
        guard case .findInformationResponse(_, let entries) = try ATTPDU(bytes: [0x05, 0x02, 0x10, 0x00] + uartUUIDBytes) else {
            Issue.record("not a Find Information Response"); return
        }
        #expect(entries[0].uuid.width == 16)
        guard case .readByTypeRequest(_, let type) = try ATTPDU(bytes: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]) else {
            Issue.record("not a Read By Type Request"); return
        }
        #expect(type.width == 2 && type.uuid16 == 0x2803)
    }

    @Test func truncatedLastLengthValueTupleIsMarked() throws {
        guard case .readMultipleVariableResponse(let list) = try ATTPDU(bytes: [0x21, 0x01, 0x00, 0x11, 0x05, 0x00, 0x22, 0x33]) else {
            Issue.record("not a Read Multiple Variable Response"); return
        }
        #expect(!list[0].isTruncated && list[1].isTruncated && list[1].length == 5)
    }

    @Test func hostileLengthsAllocateOnlyWhatIsPresent() throws {
        // Length 0xFFFF with a single value octet: kept as a truncated tuple of one octet.
        guard case .readMultipleVariableResponse(let list) = try ATTPDU(bytes: [0x21, 0xFF, 0xFF, 0x01]) else {
            Issue.record("not a Read Multiple Variable Response"); return
        }
        #expect(list == [ATTLengthValue(length: 0xFFFF, value: [0x01])])
        // A Multiple Handle Value Notification value must be complete.
        #expect(throws: DecodeError.truncated(what: "Multiple Handle Value Notification", needed: 0xFFFE)) {
            try ATTPDU(bytes: [0x23, 0x12, 0x00, 0xFF, 0xFF, 0x01])
        }
    }

    @Test func notificationFastPath() {
        #expect(ATTPDU.notificationHandle(in: [0x1B, 0x12, 0x00, 0x00, 0x48]) == 0x0012)
        #expect(ATTPDU.notificationHandle(in: [0x1B, 0x34, 0x12]) == 0x1234)
        #expect(ATTPDU.notificationHandle(in: [0x1D, 0x12, 0x00, 0x00]) == nil)
        #expect(ATTPDU.notificationHandle(in: [0x1B, 0x12]) == nil)
        #expect(ATTPDU.notificationHandle(in: []) == nil)
        let raw: [UInt8] = [0x1B, 0x0E, 0x00, 0x01]
        #expect(raw.withUnsafeBytes { ATTPDU.notificationHandle(in: $0) } == 0x000E)
    }

    /// Every decodable byte string encodes back to itself; nothing traps on random input.
    @Test func randomBytesDecodeTotallyAndRoundTrip() {
        var rng = SplitMix64(seed: 0x5EED)
        let opcodes: [UInt8] = examples.map { $0.bytes[0] } + [0x00, 0x14, 0x22, 0x40, 0x7F, 0x80, 0xFF]
        var decoded = 0
        for i in 0..<20_000 {
            let length = Int(rng.next() % 24)
            var bytes = [opcodes[i % opcodes.count]]
            for _ in 0..<length { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
            if let pdu = try? ATTPDU(bytes: bytes) {
                decoded += 1
                #expect(pdu.bytes == bytes, "\(bytes.hexString())")
            }
        }
        #expect(decoded > 1_000)
    }
}

/// A small deterministic generator for the random-input test.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
