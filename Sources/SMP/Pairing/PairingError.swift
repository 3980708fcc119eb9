import BLECore
import BLEWire

/// Why pairing or raising a link's security failed. The text names the peer and the SMP
/// reason: "Passkey Entry Failed (0x01) pairing with C4:00:00:00:00:01: ...".
public struct PairingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Error, Sendable, Equatable {
        /// The peer sent Pairing Failed with this reason.
        case peerFailed(PairingFailedReason)
        /// This side stopped the pairing and sent Pairing Failed with this reason.
        case localFailed(PairingFailedReason, detail: String)
        /// No SMP PDU within the SMP timeout (Vol 3, Part H, 3.4). SMP on this link is over
        /// until the link is re-established.
        case timeout
        /// An SMP timeout happened earlier on this link.
        case channelDead
        /// A pairing is already running on this link.
        case busy
        /// The link went away or a command on it failed (encryption included).
        case link(ConnectionError)
        /// The SMP channel closed under the pairing (the link dropped).
        case channelClosed(LinkError)
        /// The caller's task was cancelled.
        case cancelled
        /// A cryptographic primitive failed.
        case crypto(CryptoError)
        /// Encrypting with the stored bond failed with PIN or Key Missing (0x06): the peer
        /// no longer has the bond.
        case peerForgotBond
        /// Pairing with this peer failed on its authentication shortly before: a new attempt
        /// must wait this long (Repeated Attempts, Vol 3, Part H, 2.3.6).
        case repeatedAttempts(retryAfter: Duration)
    }

    public var peer: LEAddress
    public var kind: Kind

    public init(peer: LEAddress, _ kind: Kind) {
        self.peer = peer
        self.kind = kind
    }

    /// The SMP reason when there is one.
    public var reason: PairingFailedReason? {
        switch kind {
        case .peerFailed(let r), .localFailed(let r, _): return r
        default: return nil
        }
    }

    public var description: String {
        let who = peer.address
        switch kind {
        case .peerFailed(let r):
            return "\(r) pairing with \(who): the peer refused\(r.advice.map { "; \($0)" } ?? "")"
        case .localFailed(let r, let detail):
            return "\(r) pairing with \(who): \(detail)"
        case .timeout:
            return "pairing with \(who) timed out: no SMP answer within 30 s (Vol 3, Part H, 3.4); reconnect to try again"
        case .channelDead:
            return "SMP with \(who) timed out earlier on this link; disconnect and reconnect to pair"
        case .busy:
            return "a pairing with \(who) is already running on this link"
        case .link(let e):
            return "pairing with \(who) failed: \(e)"
        case .channelClosed(let e):
            return "pairing with \(who) stopped: \(e)"
        case .cancelled:
            return "pairing with \(who) was cancelled"
        case .crypto(let e):
            return "pairing with \(who) failed: \(e)"
        case .peerForgotBond:
            return "\(who) no longer has the bond (encryption with the stored key failed with PIN or Key Missing, 0x06): pair again to replace it ('ble pair \(who)', or Connection.pair(store:))"
        case .repeatedAttempts(let wait):
            let ms = wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000
            let tenths = (ms + 99) / 100
            return "pairing with \(who) failed on its authentication just before: try again in \(tenths / 10).\(tenths % 10) s (Repeated Attempts, Vol 3, Part H, 2.3.6)"
        }
    }
}
