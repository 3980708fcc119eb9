import BLECore
import BLEWire

/// How a person takes part in pairing. The app provides one; every call is async so it can
/// wait for the person (within the 30 s SMP timeout). Each decision has no default: a method
/// whose signature slips (`async throws -> UInt32`, a missing label) is a compile error, never
/// an agent that silently refuses. An agent for a device without a display or keyboard answers
/// nil and false where it has nothing to offer.
///
///     struct Terminal: PairingAgent {
///         func displayPasskey(_ passkey: UInt32, peer: LEAddress) async { print(passkey) }
///         func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { readLine().flatMap { UInt32($0) } }
///         func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { readLine() == "y" }
///         func confirmJustWorks(peer: LEAddress) async -> Bool { true }
///     }
public protocol PairingAgent: Sendable {
    /// Show `passkey` (six digits, leading zeros) for the person to type on the peer.
    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async
    /// Ask the person for the six digits the peer shows; nil refuses (Passkey Entry Failed).
    /// `keypresses` tells the peer of each digit typed or erased (Vol 3, Part H, 3.5.8) when
    /// both sides asked for it (`PairingOptions.keypressNotifications`); ignore it otherwise.
    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32?
    /// Show `value` (six digits) and ask whether the peer shows the same; false refuses
    /// (Numeric Comparison Failed).
    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool
    /// Just Works: whether to pair with a peer nobody vouched for; false refuses
    /// (Pairing Not Supported).
    func confirmJustWorks(peer: LEAddress) async -> Bool
    /// The peer reports the person typing the passkey there (3.5.8): entry started, a digit
    /// entered or erased, cleared, completed. Called on the adapter's executor: return quickly.
    /// By default ignored (it decides nothing).
    func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress)
}

extension PairingAgent {
    public func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress) {}
}

/// The default agent: no person involved. Just Works pairings go ahead; anything that needs a
/// person is refused.
///
///     let bond = try await link.pair(agent: JustWorksAgent())
public struct JustWorksAgent: PairingAgent {
    public init() {}
    public func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
    public func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? { nil }
    public func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { false }
    public func confirmJustWorks(peer: LEAddress) async -> Bool { true }
}
