import SMP
import BLEWire

/// The passkey of Passkey Entry (Vol 3, Part H, 2.3.5.3) as a person types it on the
/// terminal, key by key: what each key does to the digits, what to echo, and which Pairing
/// Keypress Notification (3.5.8) it means. Digits are entered (at most six), backspace
/// erases the last one, Ctrl-U clears them all, Enter completes; Ctrl-D refuses.
///
///     var editor = PasskeyEditor(erase: 0x7F, kill: 0x15)
///     let step = editor.key(0x31)   // "1": digit entered, echo "1"
struct PasskeyEditor {
    /// What one key did.
    struct Step: Equatable {
        /// The keypress notification to send, if the key changed the entry.
        var notification: KeypressNotificationType?
        /// Text for the terminal (the digit, or erasing it).
        var echo: String
        /// The entry ended: the passkey, or nil when refused.
        var finished: UInt32??
    }

    /// The terminal's erase and kill characters (besides DEL, BS and Ctrl-U).
    let erase: UInt8
    let kill: UInt8
    private(set) var digits: [UInt8] = []

    init(erase: UInt8, kill: UInt8) {
        // 0 is _POSIX_VDISABLE: the terminal has no such character.
        self.erase = erase == 0 ? 0x7F : erase
        self.kill = kill == 0 ? 0x15 : kill
    }

    mutating func key(_ byte: UInt8) -> Step {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard digits.count < 6 else { return Step(echo: "\u{07}") }
            digits.append(byte - UInt8(ascii: "0"))
            return Step(notification: .passkeyDigitEntered, echo: String(UnicodeScalar(byte)))
        case 0x7F, 0x08, erase:
            guard !digits.isEmpty else { return Step(echo: "") }
            digits.removeLast()
            return Step(notification: .passkeyDigitErased, echo: "\u{08} \u{08}")
        case 0x15, kill:
            guard !digits.isEmpty else { return Step(echo: "") }
            let n = digits.count
            digits.removeAll()
            return Step(notification: .passkeyCleared, echo: String(repeating: "\u{08} \u{08}", count: n))
        case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
            guard !digits.isEmpty else { return Step(echo: "\n", finished: .some(nil)) }
            let value = digits.reduce(UInt32(0)) { $0 * 10 + UInt32($1) }
            return Step(notification: .passkeyEntryCompleted, echo: "\n", finished: value)
        case 0x04:
            return Step(echo: "\n", finished: .some(nil))
        default:
            return Step(echo: "")
        }
    }
}
