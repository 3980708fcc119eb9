import BLECore
import ATT

/// Which bearer each GATT procedure runs on. With enhanced bearers open, a procedure takes
/// the one with the fewest procedures under way, so concurrent calls spread over them and
/// their requests are in flight at once, one per bearer (Core Spec 5.4 Vol 3, Part F, 3.3.2;
/// Part G, 5.3); a procedure of several requests (discovery, long and reliable writes,
/// whose prepare queue is the bearer's) stays on its bearer to the end. Without enhanced
/// bearers every procedure runs on the unenhanced bearer, whose requests queue one behind
/// the other. The unenhanced bearer always carries its preparation (Exchange MTU, the
/// Database Hash check) and the features handshake.
extension Peripheral {
    /// An open enhanced bearer and the number of procedures running on it.
    struct EnhancedBearer {
        let bearer: ATTBearer
        let channel: ObservedChannel
        var running = 0
    }

    /// The procedures of the bearer chosen for one procedure, once the unenhanced bearer is
    /// prepared (and the link restored, if it is being restored); the procedure counts as
    /// running there until `release`.
    ///
    ///     let p = try await leaseProcedures()
    ///     defer { release(p) }
    func leaseProcedures() async throws(GATTError) -> GATTProcedures {
        let unenhanced = try await procedures()
        guard let i = enhanced.indices.min(by: { enhanced[$0].running < enhanced[$1].running }) else { return unenhanced }
        enhanced[i].running += 1
        return GATTProcedures(bearer: enhanced[i].bearer, procedureTimeout: procedureTimeout)
    }

    /// Ends a procedure that ran on `p`'s bearer.
    func release(_ p: GATTProcedures) {
        guard let i = enhanced.firstIndex(where: { $0.bearer === p.bearer }) else { return }
        enhanced[i].running -= 1
    }

    /// `error`, the failure of a procedure on `p`'s bearer. A transaction timeout ends an
    /// enhanced bearer (Vol 3, Part F, 3.3.3): its channel is closed and later procedures
    /// take the others. An enhanced bearer that closed while the link is up was closed by
    /// the peer: `.enhancedBearers(.closedByPeer)` names its channel.
    func failed(_ p: GATTProcedures, _ error: GATTError) -> GATTError {
        switch error {
        case .timeout:
            retire(p.bearer)
        case .disconnected where terminalError == nil && !linkDown:
            if let sdu = (p.bearer.channel as? ObservedChannel)?.base as? CreditBasedSDUChannel {
                return .enhancedBearers(.closedByPeer(peer: peerDescription, cid: sdu.channel.localCID), peer: peerAddress)
            }
        default:
            break
        }
        return error
    }

    /// An enhanced bearer's channel closed (the peer closed it, or the link ended): its
    /// calls in flight have failed with the bearer; later ones take the other bearers.
    func enhancedBearerClosed(_ channel: ObservedChannel) {
        enhanced.removeAll { $0.channel === channel }
    }

    /// Forgets every enhanced bearer: the link they were on is gone.
    func dropEnhancedBearers() {
        enhanced.removeAll()
    }

    private func retire(_ bearer: ATTBearer) {
        guard let i = enhanced.firstIndex(where: { $0.bearer === bearer }) else { return }
        let channel = enhanced.remove(at: i).channel
        if let sdu = channel.base as? CreditBasedSDUChannel { ownedTask { _ in await sdu.channel.close() } }
    }

    /// After a restore: opens the enhanced bearers again when `enhancedBearers` asked for
    /// it (`reopenAfterRestore`). A failure leaves the unenhanced bearer (`bearerPool`).
    func reopenEnhancedBearers() async {
        guard let reopenRequest, enhanced.isEmpty else { return }
        try? await openEnhancedBearers(reopenRequest)
    }
}
