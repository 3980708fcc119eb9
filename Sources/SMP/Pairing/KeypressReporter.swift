import BLECore
import BLEWire

/// Reports a person's typing of the passkey to the peer with Pairing Keypress Notifications
/// (Vol 3, Part H, 3.5.8), given to `PairingAgent.requestPasskey(peer:keypresses:)`. Sends
/// only when both sides set Keypress in AuthReq (3.5.1) and only while the passkey is asked
/// for; each notification restarts the 30 s SMP timer (3.4).
///
///     await keypresses.notify(.passkeyDigitEntered)
public struct KeypressReporter: Sendable {
    /// Both sides asked for keypress notifications: `notify` sends them.
    public let isEnabled: Bool
    let send: @Sendable (KeypressNotificationType) async -> Void

    public init(isEnabled: Bool, send: @escaping @Sendable (KeypressNotificationType) async -> Void) {
        self.isEnabled = isEnabled
        self.send = send
    }

    /// Sends `notification` to the peer (nothing when keypress notifications are off).
    public func notify(_ notification: KeypressNotificationType) async {
        guard isEnabled else { return }
        await send(notification)
    }
}

extension SecurityManager {
    /// Sends a keypress notification of the passkey being typed here, if it still is.
    func sendKeypress(_ notification: KeypressNotificationType) {
        guard running, enteringPasskey, keypressesAgreed else { return }
        send(.pairingKeypressNotification(notification))
    }

    /// The peer's keypress notification: passed to the agent while pairing runs with
    /// keypress notifications agreed; ignored otherwise (3.5.8).
    func receivedKeypress(_ notification: KeypressNotificationType) {
        guard running, keypressesAgreed, let pairingAgent else { return }
        pairingAgent.peerKeypress(notification, peer: peer)
    }
}
