import Synchronization
import BLECore
import BLEWire

/// Repeated attempts (Vol 3, Part H, 2.3.6): after a pairing with a peer fails on its
/// authentication (a confirm, check or passkey that does not match, or the peer's own
/// Repeated Attempts), a new attempt with that peer waits an interval that doubles with each
/// failure (2 s, 4 s, ... at most 64 s); a successful pairing resets it. Kept per central,
/// so a new link to the same peer does not start afresh.
final class RepeatedAttempts: Sendable {
    struct Entry {
        var failures: Int
        var notBefore: ContinuousClock.Instant
    }
    static let base: Duration = .seconds(2)
    static let limit: Duration = .seconds(64)
    private let entries = Mutex<[BluetoothAddress: Entry]>([:])

    /// How long the caller must still wait before pairing with `peer`; nil: it may pair now.
    func wait(for peer: LEAddress, now: ContinuousClock.Instant) -> Duration? {
        entries.withLock { e in
            guard let entry = e[peer.address], entry.notBefore > now else { return nil }
            return now.duration(to: entry.notBefore)
        }
    }

    /// Records a failed attempt; returns the interval before the next one.
    @discardableResult
    func failed(_ peer: LEAddress, now: ContinuousClock.Instant) -> Duration {
        entries.withLock { e in
            let failures = (e[peer.address]?.failures ?? 0) + 1
            var interval = Self.base
            for _ in 1..<min(failures, 7) { interval *= 2 }
            interval = min(interval, Self.limit)
            e[peer.address] = Entry(failures: failures, notBefore: now.advanced(by: interval))
            return interval
        }
    }

    func succeeded(_ peer: LEAddress) {
        _ = entries.withLock { $0.removeValue(forKey: peer.address) }
    }

    /// The failures that count: the authentication itself failed (2.3.6).
    static func counts(_ kind: PairingError.Kind) -> Bool {
        let reason: PairingFailedReason
        switch kind {
        case .peerFailed(let r), .localFailed(let r, _): reason = r
        default: return false
        }
        return [.passkeyEntryFailed, .confirmValueFailed, .dhKeyCheckFailed, .numericComparisonFailed, .repeatedAttempts].contains(reason)
    }
}
