/// Makes text that came from a device or a file safe to print on a terminal: control
/// characters are shown as escapes instead of acting on the terminal. A peer can advertise
/// a name like "\u{1B}]0;owned\u{07}" that would retitle the window or rewrite the screen.
///
///     console.out("name \"\(TerminalText.escape(name))\"")   // name "\x1b]0;owned\x07"
///
/// Escaped: C0 controls (U+0000-U+001F, shown as \n, \r, \t or \xHH), DEL (\x7f), C1 controls
/// (U+0080-U+009F, shown as \u{80}..), the backslash itself (\\) so an escape cannot be forged,
/// and, for bytes, each byte of invalid UTF-8 (\xHH). JSON output is not passed through this:
/// it carries the exact text, quoted by `JSONValue.quote`.
enum TerminalText {
    static func escape(_ text: String) -> String {
        guard mayNeedEscape(text), text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for u in text.unicodeScalars { append(u, to: &out) }
        return out
    }

    /// Bytes meant as UTF-8 text: valid sequences as characters (escaped as above), every
    /// byte of an invalid sequence as \xHH.
    static func escape<C: Collection>(utf8 bytes: C) -> String where C.Element == UInt8 {
        var out = ""
        var iterator = bytes.makeIterator()
        // Each sequence is validated on its own, so an invalid byte costs only itself.
        var pending: [UInt8] = []
        func flush() {
            for b in pending { out += "\\x" + hex2(b) }
            pending.removeAll()
        }
        var lead: UInt8?
        while let b = lead ?? iterator.next() {
            lead = nil
            let length: Int
            switch b {
            case 0x00...0x7F: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: length = 0
            }
            guard length > 0 else { pending.append(b); continue }
            var sequence = [b]
            while sequence.count < length, let next = iterator.next() {
                guard next & 0xC0 == 0x80 else { lead = next; break }
                sequence.append(next)
            }
            if sequence.count == length, let s = String(validating: sequence, as: UTF8.self) {
                flush()
                for u in s.unicodeScalars { append(u, to: &out) }
            } else {
                pending.append(contentsOf: sequence)
            }
        }
        flush()
        return out
    }

    /// False when no UTF-8 byte of `text` can start an escape: a control byte, DEL, the
    /// backslash or 0xC2 (the lead byte of U+0080-U+00BF, which holds the C1 controls). A
    /// byte scan, so the usual plain line is not decoded scalar by scalar.
    static func mayNeedEscape(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            for b in bytes where b < 0x20 || b == 0x7F || b == 0x5C || b == 0xC2 { return true }
            return false
        }
    }

    static func needsEscape(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value) || u == "\\"
    }

    private static func append(_ u: Unicode.Scalar, to out: inout String) {
        switch u {
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 || u.value == 0x7F {
                out += "\\x" + hex2(UInt8(u.value))
            } else if (0x80...0x9F).contains(u.value) {
                out += "\\u{" + String(u.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }

    private static func hex2(_ b: UInt8) -> String { hexString(CollectionOfOne(b)) }
}
