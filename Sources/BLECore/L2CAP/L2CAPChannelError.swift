import BLEWire

/// Why opening, sending on, receiving from or accepting an LE credit-based channel failed.
///
///     do { try await channel.send(sdu) } catch .creditTimeout { ... }
public enum L2CAPChannelError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no link to the peer now.
    case notConnected(peer: String)
    /// The peer answered the connection request with a failure result (Vol 3, Part A, 4.23).
    case refused(peer: String, psm: UInt16, result: CreditBasedConnectionResult)
    /// The channel to `psm` needs the link at `needed` (asked with `security:`, or the peer's
    /// `refusal`), and no raiser is set (`reason` nil: pair first, or set one with
    /// `Connection.setSecurityRaiser`), or the raiser failed (`reason`).
    case securityNeeded(peer: String, psm: UInt16, needed: SecurityLevel, refusal: CreditBasedConnectionResult?, reason: String?)
    /// The peer refused the channel for lack of security (`result` 0x0005, 0x0007 or 0x0008)
    /// on a link at `level` with a key of `keySize` octets (nil: not known), and nothing this
    /// side can raise changes the answer (`SecurityLevel.toAsk(after:keySize:)`): 0x0008 on an
    /// encrypted link, 0x0007 with a 16-octet key, 0x0005 at Secure Connections.
    case refusedDespiteSecurity(peer: String, psm: UInt16, result: CreditBasedConnectionResult, level: SecurityLevel, keySize: Int?)
    /// The peer rejected the request with Command Reject (`reason` 0x0000: not understood).
    case commandRejected(peer: String, psm: UInt16, reason: UInt16)
    /// All 64 LE dynamic CIDs (0x0040-0x007F) of the link are in use.
    case noFreeCID(peer: String)
    /// No response to a signaling request within the timeout.
    case responseTimeout(peer: String, psm: UInt16, after: Duration)
    /// The peer's response breaks the rules of Vol 3, Part A, 4.23 (a CID outside the dynamic
    /// range, an MTU or MPS below 23).
    case invalidResponse(peer: String, psm: UInt16, detail: String)
    /// The SDU is longer than the MTU the peer announced.
    case sduTooLarge(size: Int, peerMTU: Int)
    /// The peer granted no credits for `after`: the SDU was not (fully) sent. When some of its
    /// K-frames went out, the rest stay queued and go when credits come.
    case creditTimeout(peer: String, cid: UInt16, after: Duration)
    /// The link's ACL queue stayed full for `after` (the controller acknowledged no packets):
    /// the SDU was not (fully) sent. Its K-frames wait in the channel, never dropped; a started
    /// SDU goes on when the queue drains.
    case linkQueueTimeout(peer: String, cid: UInt16, after: Duration)
    /// No SDU arrived within the receive timeout.
    case receiveTimeout(peer: String, cid: UInt16, after: Duration)
    /// The peer broke the K-frame or credit rules; the channel was closed (the link goes on).
    case malformedKFrame(peer: String, cid: UInt16, KFrameError)
    /// The peer closed the channel (Disconnection Request).
    case closedByPeer(peer: String, cid: UInt16)
    /// This side closed the channel.
    case closed(peer: String, cid: UInt16)
    /// The link under the channel went away, or (`LinkError.sendTimeout`) K-frames of the
    /// channel waited in the link's queue past `HCIHost.aclSendTimeout` and were dropped, so
    /// the channel was closed; its pending work failed at once.
    case link(LinkError)
    /// The calling task was cancelled.
    case cancelled(peer: String, cid: UInt16)
    /// Another task is already waiting in `receive()` on this channel.
    case receiveInProgress(cid: UInt16)
    /// A server for this PSM is already registered on the link.
    case psmInUse(psm: UInt16)
    /// An enhanced Credit Based Connection or Reconfigure Request names 1 to 5 channels
    /// (Vol 3, Part A, 4.25 and 4.27).
    case invalidChannelCount(Int)
    /// Only channels opened with the enhanced request can be reconfigured.
    case notEnhanced(cid: UInt16)
    /// The reconfiguration was refused, by the peer's response (Vol 3, Part A, 4.28) or,
    /// for a change the specification forbids, before asking.
    case reconfigurationRefused(peer: String, result: CreditBasedReconfigureResult)

    public var description: String {
        switch self {
        case .notConnected(let peer): return "not connected to \(peer): connect before opening an L2CAP channel"
        case .refused(let peer, let psm, let result):
            return "\(peer) refused the L2CAP channel to PSM \(psm.hex): \(result)" + Self.hint(result)
        case .securityNeeded(let peer, let psm, let needed, let refusal, let reason):
            let why = refusal.map { "\(peer) refused it: \($0)" } ?? "asked for with security:"
            let what = reason.map { "raising the link's security failed: \($0)" }
                ?? "pair with \(peer) first (link.requireSecurity), or let the connection pair when needed (link.setSecurityRaiser)"
            return "the L2CAP channel to PSM \(psm.hex) on \(peer) needs the link '\(needed)' (\(why)): \(what)"
        case .refusedDespiteSecurity(let peer, let psm, let result, let level, let keySize):
            let link = "a link already \(level)" + (keySize.map { " with a \($0)-octet key" } ?? "")
            return "\(peer) refused the L2CAP channel to PSM \(psm.hex): \(result) on \(link); no pairing this side can start changes that answer" + Self.advice(result)
        case .commandRejected(let peer, let psm, let reason):
            return "\(peer) rejected the credit-based request for PSM \(psm.hex) (Command Reject reason \(reason.hex)): the peer may not support LE credit-based channels"
        case .noFreeCID(let peer): return "no free dynamic CID on the link to \(peer): close a channel first"
        case .responseTimeout(let peer, let psm, let after):
            return "\(peer) did not answer the connection request for PSM \(psm.hex) within \(after)"
        case .invalidResponse(let peer, let psm, let detail): return "invalid response from \(peer) for PSM \(psm.hex): \(detail)"
        case .sduTooLarge(let size, let mtu): return "\(size)-byte SDU exceeds the peer's MTU of \(mtu) bytes: split it"
        case .creditTimeout(let peer, let cid, let after):
            return "\(peer) granted no credits on channel \(cid.hex) for \(after): the peer stopped reading"
        case .linkQueueTimeout(let peer, let cid, let after):
            return "the link to \(peer) accepted no K-frame of channel \(cid.hex) for \(after): the controller stopped acknowledging packets (peer out of range or link stalled); retry later or disconnect"
        case .receiveTimeout(let peer, let cid, let after): return "nothing arrived from \(peer) on channel \(cid.hex) for \(after)"
        case .malformedKFrame(let peer, let cid, let why): return "closed channel \(cid.hex) to \(peer): \(why)"
        case .closedByPeer(let peer, let cid): return "\(peer) closed channel \(cid.hex)"
        case .closed(let peer, let cid): return "channel \(cid.hex) to \(peer) was closed by this host"
        case .link(let error): return "\(error)"
        case .cancelled(let peer, let cid): return "waiting on channel \(cid.hex) to \(peer) was cancelled"
        case .receiveInProgress(let cid): return "another task is already receiving on channel \(cid.hex): use one reader per channel"
        case .psmInUse(let psm): return "PSM \(psm.hex) already has a server on this link"
        case .invalidChannelCount(let n): return "\(n) channels in one enhanced credit-based request: name 1 to 5"
        case .notEnhanced(let cid): return "channel \(cid.hex) was opened as an LE credit-based channel and cannot be reconfigured: open it with openL2CAPChannels"
        case .reconfigurationRefused(let peer, let result):
            return "reconfiguration of channels to \(peer) refused: \(result)" + (result == .mtuReductionNotAllowed ? "; the MTU can only grow" : "")
        }
    }

    /// What to try when the link's security cannot be raised for `result`.
    private static func advice(_ result: CreditBasedConnectionResult) -> String {
        switch result {
        case .insufficientEncryption:
            return "; if the peer wants a MITM-protected key, open the channel with security: .authenticated"
        default:
            return "; the peer asks for more than the specification allows (its security settings for this PSM are wrong)"
        }
    }

    private static func hint(_ result: CreditBasedConnectionResult) -> String {
        switch result {
        case .psmNotSupported: return "; check the PSM the peer serves"
        case .insufficientAuthentication, .insufficientEncryption, .insufficientEncryptionKeySize:
            return "; pair and encrypt the link first"
        case .noResources: return "; close other channels on the peer or retry later"
        default: return ""
        }
    }
}
