import BLEWire

/// The lines of `ble decode` for a whole capture, in record order: one per record, decoded
/// packets through `PacketDescriber`, records whose bytes do not decode as "undecodable"
/// lines under their own record number (as in Wireshark). Text lines are escaped for a
/// terminal; JSON lines carry the exact values. No Foundation, so a fuzz target compiles it.
///
///     CaptureDecoder.lines(of: try BTSnoopReader(bytes: bytes), json: false) { print($0) }
enum CaptureDecoder {
    static func lines(of capture: BTSnoopReader, json: Bool, _ emit: (String) -> Void) {
        var describer = PacketDescriber()
        var bad = capture.undecodable[...]
        var number = 0
        /// Emits the undecodable records numbered up to `limit`.
        func reportBad(through limit: Int) {
            // `<=`: records the reader skipped (monitor notes) keep no line of their own.
            while let b = bad.first, b.index <= limit {
                number += 1
                bad = bad.dropFirst()
                emit(json
                    ? JSONValue.object([("index", .int(b.index)), ("error", .string("\(b.error)")), ("bytes", .string(hexString(b.bytes)))]).text
                    : "\(pad(String(b.index), 5)) undecodable packet (\(TerminalText.escape("\(b.error)"))): \(hexString(b.bytes.prefix(32)))")
            }
        }
        for record in capture.records {
            reportBad(through: number + 1)
            number += 1
            let line = describer.describe(record, index: number)
            emit(json ? line.json.text : line.text)
        }
        reportBad(through: .max)
    }
}
