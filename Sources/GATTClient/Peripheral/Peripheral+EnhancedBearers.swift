import BLECore
import ATT
import Synchronization

/// Enhanced ATT bearers (EATT, Core Spec 5.4 Vol 3, Part G, 5.3 and Part F, 3.2.11): ATT over
/// enhanced credit-based L2CAP channels on PSM 0x0027, each bearer with its own request in
/// flight, so GATT procedures on different bearers run in parallel.
extension Peripheral {
    /// The SPSM of EATT (Assigned Numbers, L2CAP PSMs).
    public static let eattPSM: UInt16 = 0x0027

    /// Opens `count` (1 to 5) enhanced ATT bearers with one enhanced Credit Based Connection
    /// Request. A peer that refuses the PSM (no EATT server: a refusal, a Command Reject)
    /// leaves the pool with this peripheral's unenhanced bearer alone (`isEnhanced` false),
    /// so the same code runs either way; other failures are thrown. `mtu` is this side's
    /// L2CAP MTU; each bearer's ATT_MTU is the smaller of the two channels' MTUs (Vol 3,
    /// Part F, 3.2.8), without Exchange MTU. Notifications and indications that arrive on
    /// an enhanced bearer reach this peripheral's subscriptions (`subscribe(to:)`,
    /// `notifications(for:)`), each indication confirmed on the bearer it came on; the
    /// peripheral keeps the bearers for that while it lives, whether or not the pool is kept.
    ///
    ///     let pool = try await peripheral.enhancedBearers(count: 3)
    ///     async let a = pool.next().read(handle: 0x0003)
    public func enhancedBearers(count: Int, mtu: Int = 517) async throws(L2CAPChannelError) -> GATTBearerPool {
        guard let connection else { throw .notConnected(peer: peerDescription) }
        let channels: [CreditBasedChannel]
        do {
            channels = try await connection.openL2CAPChannels(psm: Self.eattPSM, count: count, mtu: mtu)
        } catch {
            switch error {
            case .refused, .commandRejected:
                return GATTBearerPool(bearers: [bearer], isEnhanced: false, procedureTimeout: procedureTimeout)
            default:
                throw error
            }
        }
        var bearers: [ATTBearer] = []
        for channel in channels {
            let bearer = ATTBearer(channel: CreditBasedSDUChannel(channel), scheduler: scheduler, clientMTU: clientMTU, transactionTimeout: transactionTimeout)
            await bearer.setEnhancedMTU(UInt16(min(await channel.mtu, await channel.peerMTU, 65535)))
            // A server may notify or indicate on any bearer: the values reach the same
            // subscriptions as on the unenhanced bearer.
            await routeValues(of: bearer)
            bearers.append(bearer)
        }
        let pool = GATTBearerPool(bearers: bearers, isEnhanced: true, procedureTimeout: procedureTimeout)
        enhancedBearerPools.append(pool)
        return pool
    }
}

/// ATT bearers of one peer that GATT procedures share: `next()` hands out their procedures
/// in turn, so concurrent callers spread across the bearers and their requests are in flight
/// at once (one per bearer, Vol 3, Part F, 3.3.2).
///
///     let values = try await withThrowingTaskGroup(of: [UInt8].self) { group in
///         for handle in handles { group.addTask { try await pool.next().read(handle: handle) } }
///         return try await group.reduce(into: []) { $0.append($1) }
///     }
public final class GATTBearerPool: Sendable {
    public let bearers: [ATTBearer]
    /// False when the peer refused EATT and the pool holds the unenhanced bearer.
    public let isEnhanced: Bool
    public let procedures: [GATTProcedures]
    private let turn = Atomic<Int>(0)

    init(bearers: [ATTBearer], isEnhanced: Bool, procedureTimeout: Duration?) {
        self.bearers = bearers
        self.isEnhanced = isEnhanced
        self.procedures = bearers.map { GATTProcedures(bearer: $0, procedureTimeout: procedureTimeout) }
    }

    /// The procedures of the next bearer in turn.
    public func next() -> GATTProcedures {
        let n = turn.wrappingAdd(1, ordering: .relaxed).oldValue
        return procedures[n % procedures.count]
    }
}
