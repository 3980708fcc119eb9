#if canImport(Glibc)
import Glibc
#endif
import CHCI

extension L2CAPSocketChannel {
    /// Raises a connected socket's link to `level` (BT_SECURITY again, now on the live link)
    /// and waits, at most `limit`, until the kernel has it there. BT_SECURITY set before
    /// connect() is not enough on LE: the kernel checks it when the link comes up, before its
    /// SMP channel has joined the link, logs "security requested but not available" and hands
    /// over the channel unencrypted while it pairs in the background. Asked on the connected
    /// socket, it waits for that pairing (or starts it, or encrypts with a stored key) and
    /// holds the socket (state BT_CONFIG for the ATT channel, suspended for a PSM) until the
    /// link is encrypted, then makes it writable again. EINVAL means the kernel cannot raise it
    /// (no SMP channel) or it is already there; the caller compares the level either way.
    /// On a failure (`failure` names it) or after `limit` (`.securityFailed` when `watch` saw
    /// why, else `.securityNotReached`) the socket is closed. The wait does not end when the
    /// watch sees a failure: it ends when the kernel ends the socket, or at `limit` when the
    /// kernel failed its own pairing and kept the link. Closing the socket right after the
    /// kernel sent its Pairing Failed crashed Debian's 6.1 kernel (list corruption in
    /// l2cap_chan_put, from l2cap_sock_release).
    static func raiseSecurity(
        _ fd: Int32, to level: SecurityLevel, peerName: String, executor: AdapterExecutor, within limit: Duration,
        failure: @escaping (Int32) -> L2CAPSocketError, watch: KernelSecurityWatch?
    ) async throws(L2CAPSocketError) {
        guard (Self.level(kernel: chci_get_bt_security(fd)) ?? .none) < level else { return }
        guard chci_set_bt_security(fd, UInt8(level.rawValue)) == 0 else { return }
        let notReached = { () -> L2CAPSocketError in
            if let seen = watch?.failure { return .securityFailed(peer: peerName, requested: level, failure: seen, errno: nil) }
            return .securityNotReached(peer: peerName, requested: level, reached: Self.level(kernel: chci_get_bt_security(fd)))
        }
        guard limit > .zero else {
            let error = notReached()
            _ = Glibc.close(fd)
            throw error
        }
        try await ConnectWait(fd: fd, queue: executor.queue, peerName: peerName, failure: failure, timedOut: notReached).run(timeout: limit)
    }
}
