#if BLE_DECODE
import BLEWire

/// The whole path of `ble decode`: btsnoop reader, packet describer (HCI, ACL reassembly,
/// L2CAP, ATT, signaling) and both output forms. Input: one selector byte, then the file;
/// the selector prepends a valid H4 or monitor header (as in the BTSnoop target) or leaves
/// the bytes as they are. Properties:
/// - no trap for any timestamps (backwards, jumps, both ends of the 64-bit range), record
///   lengths or packet bytes;
/// - text and JSON give one line per record, the same number;
/// - no text line holds a control character or a line break (names from the air are escaped).
///
/// scripts/fuzz compiles Sources/ble/Decode/*.swift (Foundation-free) into this target and
/// defines BLE_DECODE.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    var file: [UInt8]
    switch selector % 3 {
    case 0: file = BTSnoopEncoder.header
    case 1: file = BTSnoopEncoder.header; file[15] = 0xD1; file[14] = 0x07   // datalink 2001
    default: file = []
    }
    file.append(contentsOf: input.rest())
    guard let capture = try? BTSnoopReader(bytes: file) else { return 0 }

    var textLines = 0, jsonLines = 0
    CaptureDecoder.lines(of: capture, json: false) { line in
        textLines += 1
        fuzzCheck(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                  "a text line holds a control character: \(line.debugDescription)")
    }
    CaptureDecoder.lines(of: capture, json: true) { line in
        jsonLines += 1
        fuzzCheck(line.first == "{" && line.last == "}" && !line.utf8.contains(0x0A), "not one JSON object: \(line.debugDescription)")
    }
    fuzzCheck(textLines == jsonLines, "\(textLines) text lines but \(jsonLines) JSON lines")
    fuzzCheck(textLines == capture.records.count + capture.undecodable.count,
              "\(textLines) lines for \(capture.records.count) records and \(capture.undecodable.count) undecodable")
    return 0
}
#else
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }
#endif
