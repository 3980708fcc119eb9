import BLECore
import ATT

/// Which bearer each GATT procedure runs on. With enhanced bearers open, a procedure takes
/// the one with the fewest procedures under way, so concurrent calls spread over them and
/// their requests are in flight at once, one per bearer (Core Spec 5.4 Vol 3, Part F, 3.3.2;
/// Part G, 5.3); a procedure of several requests (discovery, long and reliable writes,
/// whose prepare queue is the bearer's) stays on its bearer to the end. Without enhanced
/// bearers every procedure runs on the unenhanced bearer, whose requests queue one behind
/// the other. The unenhanced bearer always carries the preparation (Exchange MTU, Database
/// Hash, Service Changed).
extension Peripheral {
    /// An open enhanced bearer and the number of procedures running on it.
    struct EnhancedBearer {
        let bearer: ATTBearer
        let channel: ObservedChannel
        var running = 0
    }

    /// Runs `body` with the procedures of the bearer chosen for it, once the unenhanced
    /// bearer is prepared (and the link restored, if it is being restored).
    func withBearer<T>(_ body: (GATTProcedures) async throws(GATTError) -> T) async throws(GATTError) -> T {
        let unenhanced = try await procedures()
        guard let i = enhanced.indices.min(by: { enhanced[$0].running < enhanced[$1].running }) else {
            return try await body(unenhanced)
        }
        let chosen = enhanced[i].bearer
        enhanced[i].running += 1
        defer { enhanced.firstIndex { $0.bearer === chosen }.map { enhanced[$0].running -= 1 } }
        do {
            return try await body(GATTProcedures(bearer: chosen, procedureTimeout: procedureTimeout))
        } catch {
            // A transaction timeout ends the bearer (Vol 3, Part F, 3.3.3): its channel is
            // closed and later procedures take the others.
            if case .timeout = error { retire(chosen) }
            throw error
        }
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
        if let sdu = channel.base as? CreditBasedSDUChannel { Task { await sdu.channel.close() } }
    }

    /// After a restore: opens the enhanced bearers again when `enhancedBearers` asked for
    /// it (`reopenAfterRestore`). A failure leaves the unenhanced bearer (`bearerPool`).
    func reopenEnhancedBearers() async {
        guard let reopenRequest, enhanced.isEmpty else { return }
        try? await openEnhancedBearers(reopenRequest)
    }
}
