#if canImport(Glibc)
import Glibc
#endif
import BLECore
import SMP
import BLEWire

/// The person at the terminal: shows passkeys, asks for them and for confirmations on stderr,
/// reads answers from stdin. On a terminal the passkey is read key by key (`CharacterMode`)
/// and each key is reported to the peer with a Pairing Keypress Notification (Vol 3, Part H,
/// 3.5.8) when both sides asked for them; from a file or a pipe it is read as a line.
///
///     let agent = TerminalAgent(console: ctx.console, passkey: nil)
///     options.keypressNotifications = agent.typesKeys
struct TerminalAgent: PairingAgent {
    let console: Console
    let passkey: UInt32?
    /// How long the entry waits for a key before giving up (the SMP timeout, 3.4).
    var idle: Duration = .seconds(30)

    /// A person types the passkey here key by key (no `--passkey`, stdin a terminal): ask
    /// the peer for keypress notifications.
    var typesKeys: Bool { passkey == nil && isatty(0) == 1 }

    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {
        console.status("type this passkey on \(peer.address): \(Self.six(passkey))")
    }

    /// The passkey from `--passkey`, else a line from stdin.
    private func passkeyLine(peer: LEAddress) -> UInt32? {
        if let passkey { return passkey }
        console.status("passkey shown on \(peer.address): ")
        guard let line = readLine(), let v = UInt32(line.trimmingCharacters()), v <= 999_999 else { return nil }
        return v
    }

    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
        if passkey != nil { return passkeyLine(peer: peer) }
        guard let mode = CharacterMode.enter() else { return passkeyLine(peer: peer) }
        defer { mode.restore() }
        await keypresses.notify(.passkeyEntryStarted)
        console.prompt("passkey shown on \(peer.address) (Enter when done): ")
        var editor = PasskeyEditor(erase: mode.erase, kill: mode.kill)
        for await input in TerminalKeys.stream(idle: idle) {
            guard case .bytes(let bytes) = input else {
                console.prompt("\n")
                console.status("no key typed for \(idle.components.seconds) s: passkey entry given up")
                return nil
            }
            for byte in bytes {
                let step = editor.key(byte)
                if !step.echo.isEmpty { console.prompt(step.echo) }
                if let notification = step.notification { await keypresses.notify(notification) }
                if let finished = step.finished { return finished }
            }
        }
        // End of input, or the task was cancelled (Ctrl-C).
        console.prompt("\n")
        return nil
    }

    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool {
        console.status("does \(peer.address) show \(Self.six(value))? [y/N] ")
        guard let line = readLine() else { return false }
        return ["y", "yes"].contains(line.trimmingCharacters().lowercased())
    }

    /// Just Works needs no person: the command line asked for the pairing.
    func confirmJustWorks(peer: LEAddress) async -> Bool { true }

    /// Six digits with leading zeros: 000123.
    static func six(_ v: UInt32) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, 6 - s.count)) + s
    }
}
