import BLECore

/// How a person takes part in pairing. The app provides one; every call is async so it can
/// wait for the person (within the 30 s SMP timeout).
///
///     struct Terminal: PairingAgent {
///         func requestPasskey(peer: LEAddress) async -> UInt32? { readLine().flatMap { UInt32($0) } }
///     }
public protocol PairingAgent: Sendable {
    /// Show `passkey` (six digits, leading zeros) for the person to type on the peer.
    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async
    /// Ask the person for the six digits the peer shows; nil refuses (Passkey Entry Failed).
    func requestPasskey(peer: LEAddress) async -> UInt32?
    /// Like `requestPasskey(peer:)`, with `keypresses` to tell the peer of each digit typed or
    /// erased (Vol 3, Part H, 3.5.8) when both sides asked for it
    /// (`PairingOptions.keypressNotifications`). By default calls `requestPasskey(peer:)`.
    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32?
    /// The peer reports the person typing the passkey there (3.5.8): entry started, a digit
    /// entered or erased, cleared, completed. Called on the adapter's executor: return quickly.
    func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress)
    /// Show `value` (six digits) and ask whether the peer shows the same; false refuses
    /// (Numeric Comparison Failed).
    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool
    /// Just Works on a pairing the app may refuse (an unknown device); default yes.
    func confirmJustWorks(peer: LEAddress) async -> Bool
}

extension PairingAgent {
    public func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
    public func requestPasskey(peer: LEAddress) async -> UInt32? { nil }
    public func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { await requestPasskey(peer: peer) }
    public func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress) {}
    public func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
    public func confirmJustWorks(peer: LEAddress) async -> Bool { true }
}

/// The default agent: no person involved. Just Works pairings go ahead; anything that needs a
/// person is refused.
public struct JustWorksAgent: PairingAgent {
    public init() {}
}
