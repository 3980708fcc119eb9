import BLECore
import SMP
import BLEWire

/// The pairing agent of `ble serve`, whose stdin is the `--notify` feed: a passkey for the
/// central to type prints on stdout as `passkey 123456`; a passkey the central shows is
/// answered with `--passkey` (else refused); Numeric Comparison is answered yes only with
/// `--accept-comparison`; Just Works goes ahead.
///
///     await central.acceptPairing(agent: ServeAgent(console: console, passkey: 123456, acceptsComparison: false))
struct ServeAgent: PairingAgent {
    let console: Console
    let passkey: UInt32?
    let acceptsComparison: Bool

    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {
        console.out("passkey \(TerminalAgent.six(passkey))")
    }

    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
        if passkey == nil { console.status("\(peer.address) shows a passkey to type: refused (no --passkey given)") }
        return passkey
    }

    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool {
        console.status("\(peer.address) compares \(TerminalAgent.six(value)): \(acceptsComparison ? "accepted (--accept-comparison)" : "refused (no --accept-comparison)")")
        return acceptsComparison
    }

    func confirmJustWorks(peer: LEAddress) async -> Bool { true }
}
