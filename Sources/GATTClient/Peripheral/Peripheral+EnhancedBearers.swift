import BLECore
import ATT
import BLEWire

/// Enhanced ATT bearers (EATT, Core Spec 5.4 Vol 3, Part G, 5.3 and Part F, 3.2.11): ATT over
/// enhanced credit-based L2CAP channels on PSM 0x0027, each bearer with its own request in
/// flight. Once they are open, the peripheral's own calls run on them in parallel
/// (Peripheral+Bearers.swift).
extension Peripheral {
    /// The SPSM of EATT (Assigned Numbers, L2CAP PSMs).
    public static let eattPSM: UInt16 = 0x0027

    /// What this client sets in the server's Client Supported Features before using EATT
    /// (Vol 3, Part G, 7.2): enhanced ATT bearers and Multiple Handle Value Notifications.
    public static let clientFeatures: GATTClientFeatures = [.enhancedATTBearer, .multipleHandleValueNotifications]

    /// What a request to open enhanced bearers asked for, kept to open them again after a
    /// restored link.
    struct EnhancedBearerRequest {
        let count: Int
        let mtu: Int
        let force: Bool
    }

    /// Opens `count` (1 to 5) enhanced ATT bearers with one enhanced Credit Based Connection
    /// Request, after the features handshake: Server Supported Features is read (Vol 3,
    /// Part G, 7.4) and, when it lists EATT (or `force` is true), this client's bits are set
    /// in Client Supported Features (7.2, `clientFeatures`; bits already set stay set). A
    /// server that does not list EATT, or refuses the PSM (a refusal, a Command Reject),
    /// leaves the peripheral on its unenhanced bearer (`isEnhanced` false); other failures
    /// are thrown. From then on the peripheral's reads, writes, discovery and CCCD writes
    /// are spread over the enhanced bearers (see `bearerPool`). `mtu` is this side's L2CAP
    /// MTU; each bearer's ATT_MTU is the smaller of the two channels' MTUs (Part F, 3.2.8).
    ///
    /// The bearers end with the link; calls in flight on them fail with `.disconnected`.
    /// With `reopenAfterRestore`, a reconnect policy that restores the link also opens them
    /// again (handshake included) once the unenhanced bearer is prepared; without it, the
    /// restored link runs on the unenhanced bearer until this is called again.
    ///
    ///     let pool = try await peripheral.enhancedBearers(count: 3)
    ///     async let a = peripheral.read(first)      // on one bearer
    ///     async let b = peripheral.read(second)     // on another, at the same time
    public func enhancedBearers(count: Int, mtu: Int = 517, force: Bool = false,
                                reopenAfterRestore: Bool = false) async throws(GATTError) -> GATTBearerPool {
        let request = EnhancedBearerRequest(count: count, mtu: mtu, force: force)
        if reopenAfterRestore { reopenRequest = request }
        try await openEnhancedBearers(request)
        return bearerPool
    }

    /// The bearers the peripheral's calls run on now: its enhanced bearers, or the
    /// unenhanced one when none is open.
    public var bearerPool: GATTBearerPool {
        enhanced.isEmpty ? GATTBearerPool(bearers: [bearer], isEnhanced: false)
                         : GATTBearerPool(bearers: enhanced.map(\.bearer), isEnhanced: true)
    }

    func openEnhancedBearers(_ request: EnhancedBearerRequest) async throws(GATTError) {
        guard let connection else { throw .enhancedBearers(.notConnected(peer: peerDescription), peer: peerAddress) }
        let p = try await procedures()
        let features = try await readServerFeatures(p)
        serverFeatures = features
        guard features.contains(.enhancedATTBearer) || request.force else { return }
        try await setClientFeatures(p)
        let channels: [CreditBasedChannel]
        do {
            channels = try await connection.openL2CAPChannels(psm: Self.eattPSM, count: request.count, mtu: request.mtu)
        } catch {
            switch error {
            case .refused, .refusedDespiteSecurity, .commandRejected, .securityNeeded: return
            default: throw .enhancedBearers(error, peer: peerAddress)
            }
        }
        for channel in channels {
            let observed = ObservedChannel(CreditBasedSDUChannel(channel))
            observed.onClose = Peripheral.enhancedCloseHandler(self)
            let bearer = ATTBearer(channel: observed, scheduler: scheduler, clientMTU: clientMTU, transactionTimeout: transactionTimeout)
            await bearer.setEnhancedMTU(UInt16(min(await channel.mtu, await channel.peerMTU, 65535)))
            // A server may notify or indicate on any bearer: the values reach the same
            // subscriptions as on the unenhanced bearer.
            await routeValues(of: bearer)
            // A channel that ended while it was being set up (the link dropped) is not used.
            guard await bearer.failure == nil, terminalError == nil, !linkDown else { continue }
            enhanced.append(EnhancedBearer(bearer: bearer, channel: observed))
        }
    }

    /// Server Supported Features (Read Using Characteristic UUID, Vol 3, Part G, 4.8.2);
    /// none when the server does not have the characteristic or refuses to read it.
    private func readServerFeatures(_ p: GATTProcedures) async throws(GATTError) -> GATTServerFeatures {
        GATTServerFeatures(rawValue: try await readFeatures(p, GATTAttributeType.serverSupportedFeatures)?.value.first ?? 0)
    }

    /// Sets `clientFeatures` in the server's Client Supported Features, keeping the bits
    /// already set (a client never clears one, Vol 3, Part G, 7.2); nothing to do when the
    /// server has no such characteristic or every bit is set already.
    private func setClientFeatures(_ p: GATTProcedures) async throws(GATTError) {
        guard let current = try await readFeatures(p, GATTAttributeType.clientSupportedFeatures) else { return }
        var value = current.value.isEmpty ? [0] : current.value
        let wanted = value[0] | Self.clientFeatures.rawValue
        guard wanted != value[0] else { return }
        value[0] = wanted
        do throws(GATTProcedureError) {
            try await p.write(handle: current.handle, value: value)
        } catch {
            throw gattError(error, .writing, .attribute(GATTAttributeType.clientSupportedFeatures, handle: current.handle))
        }
    }

    private func readFeatures(_ p: GATTProcedures, _ type: BluetoothUUID) async throws(GATTError) -> ATTHandleValue? {
        do throws(GATTProcedureError) {
            return try await p.read(type: type).first
        } catch {
            if case .att(.errorResponse) = error { return nil }
            throw gattError(error, .reading, .attribute(type, handle: nil))
        }
    }

    private static func enhancedCloseHandler(_ peripheral: Peripheral) -> @Sendable (ObservedChannel, LinkError) -> Void {
        { [weak peripheral] channel, _ in
            guard let peripheral else { return }
            peripheral.assumeIsolated { $0.enhancedBearerClosed(channel) }
        }
    }
}

/// The ATT bearers a `Peripheral`'s calls run on (`Peripheral.bearerPool`): its enhanced
/// bearers, or its unenhanced bearer alone (`isEnhanced` false) when none is open.
///
///     let pool = try await peripheral.enhancedBearers(count: 3)
///     print(pool.isEnhanced, pool.bearers.count)
public struct GATTBearerPool: Sendable {
    public let bearers: [ATTBearer]
    /// False when the pool holds the unenhanced bearer (the peer has no EATT).
    public let isEnhanced: Bool
}
